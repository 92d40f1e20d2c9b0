"""FileMetadataStore conformance: the contract in groundwork.files, run against
the PostgreSQL adapter and the in-memory fake.

The contract: a scope sees the versions of live sources of its tenant whose
subjects it shares, newest first, at most min(limit, MAX_PAGE) a page, with a
keyset cursor that stays right while files are added; `versions` lists one
source's versions oldest first and answers None alike for missing and hidden
(no oracle); `origin_of` names where a new version goes; nothing names a
storage key."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterator
from typing import Protocol

import pytest

from groundwork.files import MAX_PAGE, FileMetadataStore
from groundwork.ports import AccessScope
from groundwork.stages.registration import register_file
from resources.composition.platform import Platform
from tests.fakes import InMemoryFileMetadata


class FilesWorld(Protocol):
    store: FileMetadataStore

    def add(self, tenant_id: str, origin: str, data: bytes, subjects: tuple[str, ...]) -> str:
        """Register bytes (a new source or a new version of `origin`); the source id."""
        ...


class PostgresFiles:
    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.store = platform.files

    def add(self, tenant_id: str, origin: str, data: bytes, subjects: tuple[str, ...]) -> str:
        self.platform.catalog.ensure_tenant(
            tenant_id, tenant_id, self.platform.settings.default_model_key
        )
        return register_file(
            self.platform.catalog,
            self.platform.blobs,
            tenant_id=tenant_id,
            origin=origin,
            filename=origin.rsplit(":", 1)[-1],
            data=data,
            subjects=subjects,
            media_type="text/markdown",
        ).source_id


class FakeFiles:
    def __init__(self) -> None:
        self.store = InMemoryFileMetadata()

    def add(self, tenant_id: str, origin: str, data: bytes, subjects: tuple[str, ...]) -> str:
        return self.store.add(
            tenant_id,
            origin,
            origin.rsplit(":", 1)[-1],
            hashlib.sha256(data).hexdigest(),
            len(data),
            "text/markdown",
            subjects,
        )


class FileMetadataContract:
    @pytest.fixture
    def world(self) -> Iterator[FilesWorld]:
        raise NotImplementedError

    @staticmethod
    def _tenant() -> str:
        return f"fm-{uuid.uuid4().hex[:10]}"

    def test_is_the_port(self, world: FilesWorld) -> None:
        assert isinstance(world.store, FileMetadataStore)

    def test_pages_are_newest_first_and_the_cursor_survives_new_files(
        self, world: FilesWorld
    ) -> None:
        tenant = self._tenant()
        scope = AccessScope(tenant, ("team:a",))
        for n in range(5):
            world.add(tenant, f"api:f{n}.md", f"# F{n}\n".encode(), ("team:a",))
            time.sleep(0.01)
        first = world.store.list_files(scope, None, 2)
        assert [f.filename for f in first.files] == ["f4.md", "f3.md"]
        assert first.next_cursor is not None
        world.add(tenant, "api:late.md", b"# Late\n", ("team:a",))  # added while paging
        second = world.store.list_files(scope, first.next_cursor, 2)
        assert [f.filename for f in second.files] == ["f2.md", "f1.md"]
        third = world.store.list_files(scope, second.next_cursor, 2)
        assert [f.filename for f in third.files] == ["f0.md"] and third.next_cursor is None
        assert len(world.store.list_files(scope, None, 10_000).files) <= MAX_PAGE

    def test_hidden_and_missing_look_the_same(self, world: FilesWorld) -> None:
        tenant = self._tenant()
        source = world.add(tenant, "api:secret.md", b"# S\n", ("team:a",))
        assert world.store.versions(AccessScope(tenant, ("team:b",)), source) is None
        assert world.store.versions(AccessScope(tenant, ("team:a",)), "src_" + "0" * 32) is None
        assert world.store.versions(AccessScope(self._tenant(), ("team:a",)), source) is None
        assert world.store.versions(AccessScope(tenant, ()), source) is None
        assert world.store.list_files(AccessScope(tenant, ("team:b",)), None, 10).files == ()
        assert world.store.origin_of(AccessScope(tenant, ("team:b",)), source) is None

    def test_versions_oldest_first_and_where_a_new_one_goes(self, world: FilesWorld) -> None:
        tenant = self._tenant()
        scope = AccessScope(tenant, ("team:a",))
        source = world.add(tenant, "api:doc.md", b"# One\n", ("team:a",))
        world.add(tenant, "api:doc.md", b"# Two\n", ("team:a",))
        versions = world.store.versions(scope, source)
        assert versions is not None
        assert [v.version_no for v in versions] == [1, 2]
        assert [v.is_current for v in versions] == [False, True]
        assert world.store.origin_of(scope, source) == ("api:doc.md", "doc.md")
        assert "sha256/" not in repr(versions)  # a storage key never leaves


class TestPostgresFileMetadata(FileMetadataContract):
    @pytest.fixture
    def world(self, platform: Platform) -> Iterator[FilesWorld]:
        yield PostgresFiles(platform)


class TestInMemoryFileMetadata(FileMetadataContract):
    @pytest.fixture
    def world(self) -> Iterator[FilesWorld]:
        yield FakeFiles()
