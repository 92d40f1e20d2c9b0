"""ChunkReader conformance: the contract in groundwork.ports.ChunkReader, run
against the PostgreSQL catalog (behind its publication pointer) and the
in-memory fake the kernel's unit tests use, so the fake is proven faithful.

The contract: a chunk is read back only when its source is live, readable by
the scope (tenant and a shared subject; no subjects reads nothing), and its
version is the one the source publishes; a re-scope or deletion holds at once.
`section` gives the published siblings under the same heading, in order, and
nothing for an unknown or hidden chunk."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Protocol

import pytest

from groundwork.chunking import chunk_blocks
from groundwork.extract.markdown import markdown_blocks
from groundwork.ports import AccessScope, ChunkReader, SystemReading
from groundwork.stages.chunks import chunk_pending
from groundwork.stages.extraction import extract_pending
from groundwork.stages.registration import register_file
from resources.composition.platform import Platform
from tests.fakes import InMemoryChunkReader

DOC_V1 = "# Guide\n\n## Travel\n\nBook trains.\n\nKeep receipts.\n\n## Food\n\nMeals are paid.\n"
DOC_V2 = "# Guide\n\n## Travel\n\nFly economy.\n"


class ReaderWorld(Protocol):
    reader: ChunkReader

    def add_version(
        self, tenant_id: str, origin: str, markdown: str, subjects: tuple[str, ...]
    ) -> tuple[str, str, list[str]]:
        """Store and chunk a version (not published); (source, version, chunk ids)."""
        ...

    def publish(self, tenant_id: str, version_id: str) -> None: ...

    def rescope(self, tenant_id: str, source_id: str, subjects: tuple[str, ...]) -> None: ...

    def delete(self, tenant_id: str, source_id: str) -> None: ...


class FakeWorld:
    def __init__(self) -> None:
        self.reader = InMemoryChunkReader()
        self.sources: dict[str, str] = {}

    def add_version(
        self, tenant_id: str, origin: str, markdown: str, subjects: tuple[str, ...]
    ) -> tuple[str, str, list[str]]:
        source_id = self.sources.setdefault(origin, f"src_{uuid.uuid4().hex}")
        version_id = f"ver_{uuid.uuid4().hex}"
        chunks = chunk_blocks(
            markdown_blocks(markdown),
            tenant_id=tenant_id,
            source_id=source_id,
            version_id=version_id,
        )
        self.reader.add_version(tenant_id, chunks, subjects)
        return source_id, version_id, [c.chunk_id for c in chunks]

    def publish(self, tenant_id: str, version_id: str) -> None:
        self.reader.publish(version_id)

    def rescope(self, tenant_id: str, source_id: str, subjects: tuple[str, ...]) -> None:
        self.reader.subjects[source_id] = subjects

    def delete(self, tenant_id: str, source_id: str) -> None:
        self.reader.deleted.add(source_id)


class PostgresWorld:
    """The real catalog: versions go through registration, extraction and
    chunking; publication is the catalog's own pointer flip."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.reader = platform.search_engines(platform.settings.default_model_key).reader
        self.model = platform.settings.default_model_key

    def add_version(
        self, tenant_id: str, origin: str, markdown: str, subjects: tuple[str, ...]
    ) -> tuple[str, str, list[str]]:
        catalog = self.platform.catalog
        catalog.ensure_tenant(tenant_id, tenant_id, self.model)
        registered = register_file(
            catalog,
            self.platform.blobs,
            tenant_id=tenant_id,
            origin=origin,
            filename=origin.rsplit(":", 1)[-1],
            data=markdown.encode(),
            subjects=subjects,
            media_type="text/markdown",
        )
        extract_pending(catalog, self.platform.blobs, tenant_id)
        chunk_pending(catalog, tenant_id, self.platform.embedder(self.model).count_tokens)
        with self.platform.pool.connection() as conn:
            rows = conn.execute(
                "SELECT chunk_id FROM chunks WHERE version_id = %s AND layer = 'raw' "
                "ORDER BY position",
                (registered.version_id,),
            ).fetchall()
        return registered.source_id, registered.version_id, [r[0] for r in rows]

    def publish(self, tenant_id: str, version_id: str) -> None:
        self.platform.catalog.mark_embedded(version_id, tenant_id, self.model)
        self.platform.catalog.mark_published_many([version_id], self.model)

    def rescope(self, tenant_id: str, source_id: str, subjects: tuple[str, ...]) -> None:
        assert self.platform.catalog.set_source_subjects(tenant_id, source_id, subjects)

    def delete(self, tenant_id: str, source_id: str) -> None:
        assert self.platform.catalog.mark_source_deleting(tenant_id, source_id)


class ChunkReaderContract:
    @pytest.fixture
    def world(self) -> Iterator[ReaderWorld]:
        raise NotImplementedError

    @staticmethod
    def _tenant() -> str:
        return f"cr-{uuid.uuid4().hex[:10]}"

    def test_is_the_port(self, world: ReaderWorld) -> None:
        assert isinstance(world.reader, ChunkReader)

    def test_only_the_published_version_is_read(self, world: ReaderWorld) -> None:
        tenant = self._tenant()
        scope = AccessScope(tenant, ("team:a",))
        source, v1, ids1 = world.add_version(tenant, "api:guide.md", DOC_V1, ("team:a",))
        assert world.reader.load_chunks(scope, ids1) == {}  # stored, not yet published
        world.publish(tenant, v1)
        assert set(world.reader.load_chunks(scope, ids1)) == set(ids1)
        _, v2, ids2 = world.add_version(tenant, "api:guide.md", DOC_V2, ("team:a",))
        assert not set(ids1) & set(ids2)  # a new version never overwrites the published one
        assert set(world.reader.load_chunks(scope, ids1 + ids2)) == set(ids1)
        world.publish(tenant, v2)
        loaded = world.reader.load_chunks(scope, ids1 + ids2)
        assert set(loaded) == set(ids2) and {v.version_id for v in loaded.values()} == {v2}
        assert all(v.source_id == source for v in loaded.values())
        # a search whose legs read the indexes just before the switch holds only
        # v1's ids: within the grace window it is answered from v1, not emptied
        assert set(world.reader.load_chunks(scope, ids1)) == set(ids1)

    def test_ids_are_matched_exactly_whatever_they_contain(self, world: ReaderWorld) -> None:
        """Ids travel to the store in more than one encoding; an id with a comma,
        quote, brace or space must neither match another nor fail the read."""
        tenant = self._tenant()
        scope = AccessScope(tenant, ("team:a",))
        _, version, ids = world.add_version(tenant, "api:guide.md", DOC_V1, ("team:a",))
        world.publish(tenant, version)
        odd = [f"{ids[0]},{ids[1]}", f'{ids[0]}"', "{" + ids[0] + "}", f"{ids[0]} ", "a\\b"]
        assert world.reader.load_chunks(scope, odd) == {}
        assert set(world.reader.load_chunks(scope, [*odd, ids[1]])) == {ids[1]}

    def test_scope_tenant_subjects_deletion_and_rescoping(self, world: ReaderWorld) -> None:
        tenant = self._tenant()
        source, version, ids = world.add_version(tenant, "api:a.md", DOC_V1, ("team:a",))
        world.publish(tenant, version)
        assert world.reader.load_chunks(AccessScope(tenant, ("team:b",)), ids) == {}
        assert world.reader.load_chunks(AccessScope(tenant, ()), ids) == {}
        assert world.reader.load_chunks(AccessScope(self._tenant(), ("team:a",)), ids) == {}
        assert world.reader.has_accessible_sources(AccessScope(tenant, ("team:a",)))
        assert not world.reader.has_accessible_sources(AccessScope(tenant, ("team:b",)))
        world.rescope(tenant, source, ("team:b",))
        assert world.reader.load_chunks(AccessScope(tenant, ("team:a",)), ids) == {}
        assert set(world.reader.load_chunks(AccessScope(tenant, ("team:b",)), ids)) == set(ids)
        world.delete(tenant, source)
        assert world.reader.load_chunks(AccessScope(tenant, ("team:b",)), ids) == {}
        assert not world.reader.has_accessible_sources(AccessScope(tenant, ("team:b",)))

    def test_the_system_corpus_is_read_under_its_own_subjects_and_marked(
        self, world: ReaderWorld
    ) -> None:
        """A scope reading the system corpus reads the system owner's published
        chunks under the system subjects (never under the tenant's), marked as
        the system corpus's; a third tenant's never; sections and the
        accessible-sources probe follow the same rule."""
        tenant, system, other = self._tenant(), self._tenant(), self._tenant()
        _, mine, own = world.add_version(tenant, "api:own.md", DOC_V2, ("team:a",))
        _, shared_v, shared = world.add_version(system, "api:shared.md", DOC_V1, ("tenant:system",))
        _, narrowed_v, narrowed = world.add_version(system, "api:narrow.md", DOC_V2, ("team:a",))
        _, foreign_v, foreign = world.add_version(other, "api:foreign.md", DOC_V2, ("team:a",))
        for owner, version in (
            (tenant, mine),
            (system, shared_v),
            (system, narrowed_v),
            (other, foreign_v),
        ):
            world.publish(owner, version)
        reading = AccessScope(tenant, ("team:a",), SystemReading(system, ("tenant:system",)))
        loaded = world.reader.load_chunks(reading, own + shared + narrowed + foreign)
        assert set(loaded) == set(own + shared)
        assert {loaded[i].corpus for i in shared} == {"system"}
        assert {loaded[i].corpus for i in own} == {"tenant"}
        assert world.reader.load_chunks(AccessScope(tenant, ("team:a",)), shared) == {}
        travel = [i for i in shared if loaded[i].heading_path[-1:] == ("Travel",)]
        assert [v.chunk_id for v in world.reader.section(reading, travel[0])] == travel
        assert world.reader.section(AccessScope(tenant, ("team:a",)), travel[0]) == []
        empty = self._tenant()
        assert world.reader.has_accessible_sources(
            AccessScope(empty, ("team:a",), SystemReading(system, ("tenant:system",)))
        )
        assert not world.reader.has_accessible_sources(AccessScope(empty, ("team:a",)))

    def test_section_gives_published_siblings_in_order(self, world: ReaderWorld) -> None:
        tenant = self._tenant()
        scope = AccessScope(tenant, ("team:a",))
        _, version, ids = world.add_version(tenant, "api:s.md", DOC_V1, ("team:a",))
        world.publish(tenant, version)
        views = world.reader.load_chunks(scope, ids)
        travel = [i for i in ids if views[i].heading_path[-1:] == ("Travel",)]
        assert travel
        section = world.reader.section(scope, travel[-1])
        assert [v.chunk_id for v in section] == travel
        assert world.reader.section(scope, "ch_" + "0" * 32) == []
        assert world.reader.section(AccessScope(tenant, ("team:b",)), travel[0]) == []


class TestPostgresChunkReader(ChunkReaderContract):
    @pytest.fixture
    def world(self, platform: Platform) -> Iterator[ReaderWorld]:
        yield PostgresWorld(platform)


class TestInMemoryChunkReader(ChunkReaderContract):
    @pytest.fixture
    def world(self) -> Iterator[ReaderWorld]:
        yield FakeWorld()
