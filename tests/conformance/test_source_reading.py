"""SourceReading conformance (the catalog's reading part): the contract in
groundwork.catalog, run against the PostgreSQL adapter and the in-memory fake.

The contract: a scope sees the active sources of its tenant whose subjects it
shares, and nothing else, with missing, hidden, foreign and deleted answering
alike (None); a source's status is its current version's processing state;
`current_extraction` answers what extraction produced for the current
version, or for an earlier version by number (which stays readable after a
replacement), a failure as a value."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Protocol

import pytest

from groundwork.catalog import SourceReading
from groundwork.documents import ExtractedDocument, ExtractionFailure, FailureReason
from groundwork.extract import extract
from groundwork.ports import AccessScope
from groundwork.stages.registration import register_file
from resources.composition.platform import Platform
from tests.fakes import InMemorySourceReading, _FakeVersion


class ReadingWorld(Protocol):
    reading: SourceReading

    def add(
        self, tenant_id: str, origin: str, text: str, subjects: tuple[str, ...]
    ) -> tuple[str, str]:
        """Register (a new source, or a new version of `origin`); (source id, version id)."""
        ...

    def extracted(self, version_id: str, result: ExtractedDocument | ExtractionFailure) -> None: ...

    def delete(self, tenant_id: str, source_id: str) -> None: ...


class PostgresWorld:
    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.reading = platform.catalog

    def add(
        self, tenant_id: str, origin: str, text: str, subjects: tuple[str, ...]
    ) -> tuple[str, str]:
        self.platform.catalog.ensure_tenant(
            tenant_id, tenant_id, self.platform.settings.default_model_key
        )
        registered = register_file(
            self.platform.catalog,
            self.platform.blobs,
            tenant_id=tenant_id,
            origin=origin,
            filename=origin.rsplit(":", 1)[-1],
            data=text.encode(),
            subjects=subjects,
            media_type="text/markdown",
        )
        return registered.source_id, registered.version_id

    def extracted(self, version_id: str, result: ExtractedDocument | ExtractionFailure) -> None:
        assert self.platform.catalog.claim_extraction(version_id)
        self.platform.catalog.save_extraction(version_id, result)

    def delete(self, tenant_id: str, source_id: str) -> None:
        assert self.platform.catalog.mark_source_deleting(tenant_id, source_id)


class FakeWorld:
    def __init__(self) -> None:
        self.reading = InMemorySourceReading()
        self._origins: dict[tuple[str, str], str] = {}

    def add(
        self, tenant_id: str, origin: str, text: str, subjects: tuple[str, ...]
    ) -> tuple[str, str]:
        version_id = f"ver_{uuid.uuid4().hex}"
        source_id = self._origins.get((tenant_id, origin))
        if source_id is None:
            source_id = f"src_{uuid.uuid4().hex}"
            self._origins[(tenant_id, origin)] = source_id
            self.reading.sources[source_id] = [tenant_id, subjects, True, [], None]
        source = self.reading.sources[source_id]
        source[3].append(_FakeVersion(version_id, len(source[3]) + 1, origin.rsplit(":", 1)[-1]))
        source[4] = version_id
        return source_id, version_id

    def extracted(self, version_id: str, result: ExtractedDocument | ExtractionFailure) -> None:
        for source in self.reading.sources.values():
            for version in source[3]:
                if version.version_id == version_id:
                    version.result = result
                    version.processing_state = (
                        "failed" if isinstance(result, ExtractionFailure) else "extracted"
                    )

    def delete(self, tenant_id: str, source_id: str) -> None:
        self.reading.sources[source_id][2] = False


def _document(text: str) -> ExtractedDocument:
    result = extract(text.encode(), "text/markdown", "doc.md")
    assert isinstance(result, ExtractedDocument)
    return result


class SourceReadingContract:
    @pytest.fixture
    def world(self) -> Iterator[ReadingWorld]:
        raise NotImplementedError

    @staticmethod
    def _tenant() -> str:
        return f"sr-{uuid.uuid4().hex[:10]}"

    def test_a_scope_sees_only_what_it_may(self, world: ReadingWorld) -> None:
        tenant = self._tenant()
        assert not world.reading.has_accessible_sources(AccessScope(tenant, ("team:a",)))
        source, _ = world.add(tenant, "api:a.md", "# A\n\nalpha\n", ("team:a",))
        assert world.reading.has_accessible_sources(AccessScope(tenant, ("team:a",)))
        assert not world.reading.has_accessible_sources(AccessScope(tenant, ("team:b",)))
        assert not world.reading.has_accessible_sources(AccessScope(tenant, ()))
        assert not world.reading.has_accessible_sources(AccessScope(self._tenant(), ("team:a",)))
        world.delete(tenant, source)
        assert not world.reading.has_accessible_sources(AccessScope(tenant, ("team:a",)))

    def test_status_follows_the_current_version(self, world: ReadingWorld) -> None:
        tenant = self._tenant()
        scope = AccessScope(tenant, ("team:a",))
        source, first = world.add(tenant, "api:s.md", "# S\n\none\n", ("team:a",))
        status = world.reading.source_status(scope, source)
        assert status is not None
        assert (status["source_id"], status["version_id"], status["version_no"]) == (
            source,
            first,
            1,
        )
        assert status["processing_state"] == "pending" and status["published"] is False
        world.extracted(first, _document("# S\n\none\n"))
        assert world.reading.source_status(scope, source)["processing_state"] == "extracted"  # type: ignore[index]
        _, second = world.add(tenant, "api:s.md", "# S\n\ntwo\n", ("team:a",))
        world.extracted(second, ExtractionFailure(FailureReason.MALFORMED, "truncated"))
        status = world.reading.source_status(scope, source)
        assert status is not None
        assert (status["version_id"], status["version_no"]) == (second, 2)
        assert (status["processing_state"], status["failure_reason"]) == ("failed", "malformed")

    def test_extractions_by_version_and_failures_as_values(self, world: ReadingWorld) -> None:
        tenant = self._tenant()
        scope = AccessScope(tenant, ("team:a",))
        source, first = world.add(tenant, "api:e.md", "# E\n\nfirst text\n", ("team:a",))
        assert world.reading.current_extraction(scope, source) == (first, None)  # not yet
        world.extracted(first, _document("# E\n\nfirst text\n"))
        _, second = world.add(tenant, "api:e.md", "# E\n\nsecond\n", ("team:a",))
        world.extracted(second, ExtractionFailure(FailureReason.ENCRYPTED, "a password"))
        current = world.reading.current_extraction(scope, source)
        assert current is not None and current[0] == second
        assert isinstance(current[1], ExtractionFailure)
        assert current[1].reason == FailureReason.ENCRYPTED
        earlier = world.reading.current_extraction(scope, source, version_no=1)
        assert earlier is not None and earlier[0] == first
        assert isinstance(earlier[1], ExtractedDocument)
        assert "first text" in " ".join(b.text for b in earlier[1].blocks)
        assert world.reading.current_extraction(scope, source, version_no=9) is None

    def test_hidden_missing_foreign_and_deleted_look_the_same(self, world: ReadingWorld) -> None:
        tenant = self._tenant()
        source, version = world.add(tenant, "api:h.md", "# H\n\nhidden\n", ("team:a",))
        world.extracted(version, _document("# H\n\nhidden\n"))
        for scope, wanted in (
            (AccessScope(tenant, ("team:b",)), source),
            (AccessScope(self._tenant(), ("team:a",)), source),
            (AccessScope(tenant, ()), source),
            (AccessScope(tenant, ("team:a",)), f"src_{uuid.uuid4().hex}"),
        ):
            assert world.reading.source_status(scope, wanted) is None
            assert world.reading.current_extraction(scope, wanted) is None
        world.delete(tenant, source)
        assert world.reading.source_status(AccessScope(tenant, ("team:a",)), source) is None
        assert world.reading.current_extraction(AccessScope(tenant, ("team:a",)), source) is None


class TestPostgresSourceReading(SourceReadingContract):
    @pytest.fixture
    def world(self, platform: Platform) -> Iterator[ReadingWorld]:
        yield PostgresWorld(platform)


class TestInMemorySourceReading(SourceReadingContract):
    @pytest.fixture
    def world(self) -> Iterator[ReadingWorld]:
        yield FakeWorld()
