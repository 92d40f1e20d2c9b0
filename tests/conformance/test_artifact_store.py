"""ArtifactStore and ExportStore conformance: the contracts in
groundwork.artifacts, groundwork.artifact_staleness and
groundwork.artifact_exports, run against the
PostgreSQL adapter and the in-memory fake.

The contracts: `commit_version` is the only way a generation moves, checked
under a lock so of concurrent writers exactly one wins and the others get
StaleGenerationError with the current generation; reads take a scope and
answer None / [] for hidden, deleted, foreign and missing alike; staleness
names a source with a newer version or a deleted one, and a cited chunk whose
text changed or that was removed (its source deleted, or no such chunk). One export row per
(tenant, artifact, generation, format): exactly one of concurrent claimers
renders, the others wait for its outcome; a failed export is reclaimed."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Protocol

import pytest

from groundwork.artifact_exports import ExportStore
from groundwork.artifact_staleness import stale_reasons
from groundwork.artifacts import ArtifactStore, NewFile, StaleGenerationError
from groundwork.catalog import VersionRecord
from groundwork.chunking import Chunk, chunk_id_for, content_hash
from groundwork.documents import Location
from groundwork.errors import StoreError
from groundwork.ports import AccessScope
from groundwork.stages.registration import register_file
from resources.composition.platform import Platform
from tests.fakes import FakeChunk, FakeSource, InMemoryArtifacts


class Artifacts(ArtifactStore, ExportStore, Protocol):
    pass


class ArtifactsWorld(Protocol):
    @property
    def store(self) -> Artifacts: ...

    def add_source(self, tenant_id: str, subjects: tuple[str, ...]) -> tuple[str, str]:
        """A new active source; (source id, its version id)."""
        ...

    def new_version(self, tenant_id: str, source_id: str) -> str: ...

    def delete_source(self, tenant_id: str, source_id: str) -> None: ...

    def add_chunk(self, tenant_id: str, source_id: str, version_id: str, text: str) -> str:
        """A chunk of the version at the next position with this text; its id."""
        ...

    def rewrite_chunk(self, tenant_id: str, chunk_id: str, text: str) -> None:
        """The same chunk id, now holding other text (a re-chunk of its version)."""
        ...


def _chunk(tenant_id: str, source_id: str, version_id: str, position: int, text: str) -> Chunk:
    return Chunk(
        chunk_id_for(tenant_id, version_id, position),
        tenant_id,
        source_id,
        version_id,
        position,
        (),
        text,
        Location(line_start=position + 1),
        "text",
        len(text.split()),
    )


class PostgresWorld:
    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.store = platform.artifacts
        self._origins: dict[str, str] = {}
        self._chunks: dict[str, Chunk] = {}

    def _register(self, tenant_id: str, origin: str, subjects: tuple[str, ...]) -> tuple[str, str]:
        self.platform.catalog.ensure_tenant(
            tenant_id, tenant_id, self.platform.settings.default_model_key
        )
        registered = register_file(
            self.platform.catalog,
            self.platform.blobs,
            tenant_id=tenant_id,
            origin=origin,
            filename=origin.rsplit(":", 1)[-1],
            data=f"# Report {uuid.uuid4().hex}\n".encode(),
            subjects=subjects,
            media_type="text/markdown",
        )
        self._origins[registered.source_id] = origin
        return registered.source_id, registered.version_id

    def add_source(self, tenant_id: str, subjects: tuple[str, ...]) -> tuple[str, str]:
        return self._register(tenant_id, f"artifact:{uuid.uuid4().hex[:8]}.md", subjects)

    def new_version(self, tenant_id: str, source_id: str) -> str:
        return self._register(tenant_id, self._origins[source_id], ("team:a",))[1]

    def delete_source(self, tenant_id: str, source_id: str) -> None:
        assert self.platform.catalog.mark_source_deleting(tenant_id, source_id)

    def _write(self, version_id: str) -> None:
        """Every chunk of the version (replace_chunks drops the positions past
        the list, as a re-chunk does; it reads only the record's version id)."""
        chunks = sorted(
            (c for c in self._chunks.values() if c.version_id == version_id),
            key=lambda c: c.position,
        )
        first = chunks[0]
        version = VersionRecord(
            version_id, first.tenant_id, first.source_id, 1, "", "", "", 0, "", (), "", ""
        )
        self.platform.catalog.replace_chunks(version, chunks)

    def add_chunk(self, tenant_id: str, source_id: str, version_id: str, text: str) -> str:
        position = sum(1 for c in self._chunks.values() if c.version_id == version_id)
        chunk = _chunk(tenant_id, source_id, version_id, position, text)
        self._chunks[chunk.chunk_id] = chunk
        self._write(version_id)
        return chunk.chunk_id

    def rewrite_chunk(self, tenant_id: str, chunk_id: str, text: str) -> None:
        old = self._chunks[chunk_id]
        self._chunks[chunk_id] = _chunk(
            tenant_id, old.source_id, old.version_id, old.position, text
        )
        self._write(old.version_id)


class FakeWorld:
    def __init__(self) -> None:
        self.sources: dict[str, FakeSource] = {}
        self.chunks: dict[str, FakeChunk] = {}
        self.store = InMemoryArtifacts(self.sources, self.chunks)

    def add_source(self, tenant_id: str, subjects: tuple[str, ...]) -> tuple[str, str]:
        source_id, version_id = f"src_{uuid.uuid4().hex}", f"ver_{uuid.uuid4().hex}"
        self.sources[source_id] = FakeSource(tenant_id, subjects, version_id)
        return source_id, version_id

    def new_version(self, tenant_id: str, source_id: str) -> str:
        version_id = f"ver_{uuid.uuid4().hex}"
        self.sources[source_id].current_version_id = version_id
        return version_id

    def delete_source(self, tenant_id: str, source_id: str) -> None:
        self.sources[source_id].active = False

    def add_chunk(self, tenant_id: str, source_id: str, version_id: str, text: str) -> str:
        chunk = _chunk(tenant_id, source_id, version_id, len(self.chunks), text)
        self.chunks[chunk.chunk_id] = FakeChunk(tenant_id, source_id, chunk.content_hash)
        return chunk.chunk_id

    def rewrite_chunk(self, tenant_id: str, chunk_id: str, text: str) -> None:
        old = self.chunks[chunk_id]
        self.chunks[chunk_id] = FakeChunk(tenant_id, old.source_id, content_hash(text))


def _provenance(source_id: str, version_id: str) -> dict[str, object]:
    return {
        "tool": "conformance",
        "inputs": {},
        "run": "test",
        "derived_from": [{"source_id": source_id, "version_id": version_id}],
    }


def _file(role: str = "primary", fmt: str = "markdown") -> NewFile:
    digest = uuid.uuid4().hex * 2
    return NewFile(role, fmt, "text/markdown", f"sha256/{digest}", digest, 12)


def _commit(
    world: ArtifactsWorld,
    tenant: str,
    artifact_id: str,
    source_id: str,
    on_generation: int,
    version_id: str,
    note: str,
    files: list[NewFile],
) -> int:
    """A commit of `version_id` with its provenance, written on `on_generation`."""
    return world.store.commit_version(
        tenant,
        artifact_id,
        source_id,
        on_generation,
        version_id,
        _provenance(source_id, version_id),
        None,
        [note],
        files,
    )


class ArtifactContract:
    @pytest.fixture
    def world(self) -> Iterator[ArtifactsWorld]:
        raise NotImplementedError

    @staticmethod
    def _tenant() -> str:
        return f"ar-{uuid.uuid4().hex[:10]}"

    def _first(self, world: ArtifactsWorld, tenant: str) -> tuple[str, str, str]:
        source_id, version_id = world.add_source(tenant, ("team:a",))
        artifact_id = f"art_{uuid.uuid4().hex}"
        generation = _commit(
            world,
            tenant,
            artifact_id,
            source_id,
            0,
            version_id,
            "created",
            [_file(), _file("preview", "html")],
        )
        assert generation == 1
        return artifact_id, source_id, version_id

    def test_a_version_without_its_provenance_is_refused(self, world: ArtifactsWorld) -> None:
        tenant = self._tenant()
        source_id, version_id = world.add_source(tenant, ("team:a",))
        with pytest.raises(StoreError):
            world.store.commit_version(
                tenant, f"art_{uuid.uuid4().hex}", source_id, 0, version_id, {}, None, [], []
            )

    def test_a_first_commit_is_generation_one_with_its_history_and_files(
        self, world: ArtifactsWorld
    ) -> None:
        tenant = self._tenant()
        artifact_id, source_id, version_id = self._first(world, tenant)
        scope = AccessScope(tenant, ("team:a",))
        record = world.store.get(scope, artifact_id)
        assert record is not None
        assert (record.generation, record.source_id, record.current_version_id) == (
            1,
            source_id,
            version_id,
        )
        assert record.subjects == ("team:a",)
        history = world.store.versions(scope, artifact_id)
        assert [(v.generation, v.source_version_id, v.summary) for v in history] == [
            (1, version_id, ("created",))
        ]
        files = world.store.files(scope, artifact_id, 1)
        assert sorted((f.role, f.format) for f in files) == [
            ("preview", "html"),
            ("primary", "markdown"),
        ]
        assert world.store.files(scope, artifact_id, 2) == []

    def test_a_stale_writer_is_told_the_current_generation(self, world: ArtifactsWorld) -> None:
        tenant = self._tenant()
        artifact_id, source_id, _ = self._first(world, tenant)
        second = world.new_version(tenant, source_id)
        assert _commit(world, tenant, artifact_id, source_id, 1, second, "edited", [_file()]) == 2
        with pytest.raises(StaleGenerationError) as stale:
            # the second writer still thinks it is on generation 1
            _commit(world, tenant, artifact_id, source_id, 1, second, "late", [_file()])
        assert stale.value.current == 2
        scope = AccessScope(tenant, ("team:a",))
        assert [v.generation for v in world.store.versions(scope, artifact_id)] == [1, 2]

    def test_a_commit_swaps_the_role_rows_and_queues_the_superseded_blobs(
        self, world: ArtifactsWorld
    ) -> None:
        tenant = self._tenant()
        artifact_id, source_id, _ = self._first(world, tenant)
        scope = AccessScope(tenant, ("team:a",))
        old = {f.blob_key for f in world.store.files(scope, artifact_id, 1)}
        second = world.new_version(tenant, source_id)
        new = _file()
        _commit(world, tenant, artifact_id, source_id, 1, second, "edited", [new])
        assert world.store.files(scope, artifact_id, 1) == []  # swapped, not kept beside
        assert [f.blob_key for f in world.store.files(scope, artifact_id, 2)] == [new.blob_key]
        assert sorted(world.store.queued_purges(tenant, artifact_id)) == sorted(old)
        assert world.store.queued_purges(self._tenant()) == []  # another tenant's queue
        assert world.store.blob_referenced(new.blob_key)
        assert not any(world.store.blob_referenced(k) for k in old)
        first, other = sorted(old)
        world.store.finish_purge(tenant, first, "refused")  # stays queued
        world.store.finish_purge(tenant, other, None)
        assert world.store.queued_purges(tenant) == [first]

    def test_of_concurrent_writers_exactly_one_wins(self, world: ArtifactsWorld) -> None:
        tenant = self._tenant()
        artifact_id, source_id, _ = self._first(world, tenant)
        versions = [world.new_version(tenant, source_id) for _ in range(6)]
        won: list[int] = []
        lost: list[int] = []
        barrier = threading.Barrier(len(versions))

        def write(version_id: str) -> None:
            barrier.wait()
            try:
                won.append(
                    _commit(world, tenant, artifact_id, source_id, 1, version_id, "race", [])
                )
            except StaleGenerationError as stale:
                lost.append(stale.current)

        threads = [threading.Thread(target=write, args=(v,)) for v in versions]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert won == [2] and lost == [2] * (len(versions) - 1)

    def test_hidden_deleted_foreign_and_missing_look_the_same(self, world: ArtifactsWorld) -> None:
        tenant = self._tenant()
        artifact_id, source_id, _ = self._first(world, tenant)
        for scope, wanted in (
            (AccessScope(tenant, ("team:b",)), artifact_id),
            (AccessScope(self._tenant(), ("team:a",)), artifact_id),
            (AccessScope(tenant, ()), artifact_id),
            (AccessScope(tenant, ("team:a",)), f"art_{uuid.uuid4().hex}"),
        ):
            assert world.store.get(scope, wanted) is None
            assert world.store.versions(scope, wanted) == []
            assert world.store.files(scope, wanted, 1) == []
        world.delete_source(tenant, source_id)
        assert world.store.get(AccessScope(tenant, ("team:a",)), artifact_id) is None

    def test_staleness_names_newer_and_deleted_sources(self, world: ArtifactsWorld) -> None:
        tenant = self._tenant()
        fresh, fresh_version = world.add_source(tenant, ("team:a",))
        moved, moved_version = world.add_source(tenant, ("team:a",))
        gone, gone_version = world.add_source(tenant, ("team:a",))
        world.new_version(tenant, moved)
        world.delete_source(tenant, gone)
        reasons = stale_reasons(
            world.store,
            tenant,
            [
                {"source_id": fresh, "version_id": fresh_version},
                {"source_id": moved, "version_id": moved_version},
                {"source_id": gone, "version_id": gone_version},
            ],
        )
        assert sorted(reasons) == sorted(
            [
                f"source {moved} has a newer version than the one used",
                f"source {gone} was deleted",
            ]
        )

    def test_staleness_names_changed_and_removed_chunks(self, world: ArtifactsWorld) -> None:
        tenant = self._tenant()
        kept, kept_version = world.add_source(tenant, ("team:a",))
        gone, gone_version = world.add_source(tenant, ("team:a",))
        same = world.add_chunk(tenant, kept, kept_version, "the hotel limit is 180")
        edited = world.add_chunk(tenant, kept, kept_version, "meals are 60 a day")
        orphaned = world.add_chunk(tenant, gone, gone_version, "trains under 600 km")
        world.rewrite_chunk(tenant, edited, "meals are 75 a day")
        world.delete_source(tenant, gone)
        never = chunk_id_for(tenant, kept_version, 999)
        reasons = stale_reasons(
            world.store,
            tenant,
            [
                {"chunk_id": same, "content_hash": content_hash("the hotel limit is 180")},
                {"chunk_id": edited, "content_hash": content_hash("meals are 60 a day")},
                {"chunk_id": orphaned, "content_hash": content_hash("trains under 600 km")},
                {"chunk_id": never, "content_hash": content_hash("anything")},
            ],
        )
        assert sorted(reasons) == sorted(
            [
                f"cited chunk {edited} changed since the artifact was written",
                f"cited chunk {orphaned} was removed (its source was deleted)",
                f"cited chunk {never} was removed (its source was deleted)",
            ]
        )

    def test_another_tenants_chunks_and_sources_are_not_seen(self, world: ArtifactsWorld) -> None:
        """A reference to another tenant's live chunk or source reads as removed:
        staleness never confirms that an id exists elsewhere."""
        owner, other = self._tenant(), self._tenant()
        source, version = world.add_source(owner, ("team:a",))
        chunk = world.add_chunk(owner, source, version, "owned text")
        reasons = stale_reasons(
            world.store,
            other,
            [
                {"chunk_id": chunk, "content_hash": content_hash("owned text")},
                {"source_id": source, "version_id": version},
            ],
        )
        assert sorted(reasons) == sorted(
            [
                f"cited chunk {chunk} was removed (its source was deleted)",
                f"source {source} was deleted",
            ]
        )

    def test_one_claimer_renders_the_others_wait_for_its_outcome(
        self, world: ArtifactsWorld
    ) -> None:
        tenant = self._tenant()
        artifact_id, _, _ = self._first(world, tenant)
        claims: list[tuple[dict[str, object], bool]] = []
        barrier = threading.Barrier(6)

        def claim() -> None:
            barrier.wait()
            claims.append(world.store.claim_export(tenant, artifact_id, 1, "pdf"))

        threads = [threading.Thread(target=claim) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winners = [row for row, claimed in claims if claimed]
        assert len(winners) == 1
        waiter = next(row for row, claimed in claims if not claimed)
        assert waiter["state"] == "pending"
        finished = world.store.finish_export(winners[0], _file("export", "pdf"), None)
        assert finished["state"] == "rendered" and finished["file_id"]
        assert world.store.wait_export(waiter, timeout=5)["file_id"] == finished["file_id"]
        assert world.store.claim_export(tenant, artifact_id, 1, "pdf")[1] is False

    def test_a_failed_export_is_reclaimed(self, world: ArtifactsWorld) -> None:
        tenant = self._tenant()
        artifact_id, _, _ = self._first(world, tenant)
        row, claimed = world.store.claim_export(tenant, artifact_id, 1, "docx")
        assert claimed
        failed = world.store.finish_export(row, None, "the renderer crashed")
        assert (failed["state"], failed["failure_reason"]) == ("failed", "the renderer crashed")
        again, reclaimed = world.store.claim_export(tenant, artifact_id, 1, "docx")
        assert reclaimed and again["state"] == "pending" and again["renders"] == 2


class TestPostgresArtifacts(ArtifactContract):
    @pytest.fixture
    def world(self, platform: Platform) -> Iterator[ArtifactsWorld]:
        yield PostgresWorld(platform)


class TestInMemoryArtifacts(ArtifactContract):
    @pytest.fixture
    def world(self) -> Iterator[ArtifactsWorld]:
        yield FakeWorld()
