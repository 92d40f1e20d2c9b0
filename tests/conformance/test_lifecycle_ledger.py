"""LifecycleLedger conformance (the catalog's lifecycle part): the contract in
groundwork.catalog, run against the PostgreSQL adapter and the in-memory fake.

The contract: deletion marks first (compare-and-set on a live source of the
tenant), and from the mark on the source is no stage's work, serves nothing,
cannot be re-scoped, tagged or registered again, and a version still pending
can no longer be stored; finishing a deletion drops its chunks and progress,
records tombstones, and leaves the source row, which a later registration of
the origin brings back; a blob is freed only when no other live version (of
any tenant) uses it; erasing a tenant removes its rows and only its; the
serving model switches by compare-and-set, the model switched away from is
retired only after the grace period, and a forgotten model has neither
progress nor publication left; the inbox mirror lists live inbox sources, and
trusts a recorded read's stat signature while the version it produced is current."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from groundwork.catalog import LifecycleLedger, TenantCounts
from groundwork.errors import InvalidRequest
from groundwork.stages.registration import blob_key_for
from resources.composition.platform import Platform
from tests.conformance.pipeline_steps import (
    MODEL_A,
    MODEL_B,
    LifecycleCatalog,
    begin,
    chunked,
    ids,
    indexed,
    published,
    sha,
    stored,
)
from tests.fakes_catalog import InMemoryPipelineCatalog


class LifecycleContract:
    @pytest.fixture
    def catalog(self) -> Iterator[LifecycleCatalog]:
        raise NotImplementedError

    @pytest.fixture
    def tenant(self) -> str:
        return f"lc-{uuid.uuid4().hex[:10]}"

    @pytest.fixture
    def other(self) -> str:
        return f"lc-{uuid.uuid4().hex[:10]}"

    def test_the_subject_is_the_port(self, catalog: LifecycleCatalog) -> None:
        assert isinstance(catalog, LifecycleLedger)

    # deletion ------------------------------------------------------------------------
    def test_a_source_marked_for_deletion_leaves_every_stage_and_serves_nothing(
        self, catalog: LifecycleCatalog, tenant: str, other: str
    ) -> None:
        doomed, _ = published(catalog, tenant, "inbox:a.md", "one")
        waiting = stored(catalog, tenant, "inbox:b.md", "two")
        kept = stored(catalog, other, "inbox:b.md", "two")

        assert catalog.mark_source_deleting(tenant, doomed.source_id) is True
        assert catalog.mark_source_deleting(tenant, doomed.source_id) is False
        assert catalog.mark_source_deleting(tenant, kept.source_id) is False  # another tenant's
        assert catalog.mark_source_deleting(tenant, f"src_{uuid.uuid4().hex}") is False

        assert catalog.sources_marked_for_deletion(tenant) == [(tenant, doomed.source_id)]
        assert (tenant, doomed.source_id) in catalog.sources_marked_for_deletion(None)
        assert catalog.sources_marked_for_deletion(other) == []
        assert catalog.live_chunk_ids(tenant, None) == set()
        assert catalog.superseded_versions(tenant, None) == []
        assert [v.version_id for v in catalog.versions_to_extract(tenant, 10)] == [
            waiting.version_id
        ]
        assert catalog.counts(tenant).sources == 1
        assert catalog.set_source_subjects(tenant, doomed.source_id, ["team:b"]) is False
        assert catalog.set_source_tags(tenant, doomed.source_id, ["x"]) is False
        with pytest.raises(InvalidRequest):
            begin(catalog, tenant, "inbox:a.md", "one again")

    def test_a_version_pending_when_its_source_is_marked_is_never_stored(
        self, catalog: LifecycleCatalog, tenant: str
    ) -> None:
        # bytes of this test alone: blobs are content-addressed and shared
        first = stored(catalog, tenant, "inbox:a.md", f"{tenant} one")
        racing = begin(catalog, tenant, "inbox:a.md", f"{tenant} two")
        assert catalog.mark_source_deleting(tenant, first.source_id)
        assert catalog.mark_stored(racing.version_id) is False
        assert sorted(catalog.blob_keys_only_used_by(first.source_id)) == sorted(
            [blob_key_for(sha(f"{tenant} one")), blob_key_for(sha(f"{tenant} two"))]
        )

    def test_finishing_a_deletion_drops_the_chunks_and_keeps_tombstones(
        self, catalog: LifecycleCatalog, tenant: str, other: str
    ) -> None:
        _, served = published(catalog, tenant, "inbox:a.md", "one", count=2)
        newer, waiting = chunked(catalog, tenant, "inbox:a.md", "two", count=3)
        source_id = newer.source_id
        everything = ids(served) | ids(waiting)
        assert set(catalog.source_chunk_ids(source_id)) == everything
        assert catalog.mark_source_deleting(tenant, source_id)

        tombstones = [(c, "catalog") for c in sorted(everything)]
        tombstones += [(c, "keyword") for c in sorted(everything)]
        tombstones += [(blob_key_for(sha("one")), "blob")]
        catalog.finish_deletion(tenant, source_id, tombstones)
        catalog.finish_deletion(tenant, source_id, tombstones)  # a retried sweep changes nothing

        assert catalog.source_chunk_ids(source_id) == []
        assert catalog.tombstoned_chunk_ids(tenant) == everything  # the catalog's, not the blob's
        assert catalog.tombstoned_chunk_ids(other) == set()
        assert catalog.sources_marked_for_deletion(tenant) == []
        # the version rows stay (citations name them); their text and progress go
        assert catalog.counts(tenant) == TenantCounts(sources=0, versions=2, failed=0, chunks=0)
        assert catalog.versions_to_publish(tenant, MODEL_A) == []
        assert catalog.publication_latency(tenant, MODEL_A) == []

        # the origin can be registered again, its last bytes included (they were
        # purged): the same source, the next number, the new upload's subjects
        again = begin(catalog, tenant, "inbox:a.md", "two", subjects=("team:b",))
        assert again.source_id == source_id and not again.is_new_source
        assert catalog.mark_stored(again.version_id)
        [record] = catalog.versions_to_extract(tenant, 10)
        assert (record.version_id, record.version_no, record.subjects) == (
            again.version_id,
            3,
            ("team:b",),
        )
        assert catalog.inbox_sources(tenant) == {"inbox:a.md": (source_id, ("team:b",))}

    def test_a_blob_is_freed_only_when_no_other_live_version_uses_it(
        self, catalog: LifecycleCatalog, tenant: str, other: str
    ) -> None:
        # bytes of this test alone: blobs are content-addressed and shared
        mine = stored(catalog, tenant, "inbox:a.md", f"{tenant} mine")
        stored(catalog, tenant, "inbox:a.md", f"{tenant} shared here")
        stored(catalog, tenant, "inbox:a.md", f"{tenant} shared there")
        stored(catalog, tenant, "inbox:a.md", f"{tenant} still arriving")
        neighbour = stored(catalog, tenant, "inbox:b.md", f"{tenant} shared here")
        # pending: its bytes are on the way
        begin(catalog, tenant, "inbox:c.md", f"{tenant} still arriving")
        stored(catalog, other, "inbox:x.md", f"{tenant} shared there")

        assert catalog.blob_keys_only_used_by(mine.source_id) == [
            blob_key_for(sha(f"{tenant} mine"))
        ]
        # a neighbour being deleted no longer holds its bytes for anyone
        assert catalog.mark_source_deleting(tenant, neighbour.source_id)
        assert sorted(catalog.blob_keys_only_used_by(mine.source_id)) == sorted(
            [blob_key_for(sha(f"{tenant} mine")), blob_key_for(sha(f"{tenant} shared here"))]
        )
        # a tenant's blobs are those no other tenant references, whatever their state
        assert sorted(catalog.tenant_blob_keys(tenant)) == sorted(
            blob_key_for(sha(f"{tenant} {text}"))
            for text in ("mine", "shared here", "still arriving")
        )
        assert catalog.tenant_blob_keys(other) == []

    # re-scoping, tags, the inbox mirror -----------------------------------------------------
    def test_subjects_and_tags_change_only_on_a_live_source_of_the_tenant(
        self, catalog: LifecycleCatalog, tenant: str, other: str
    ) -> None:
        source = stored(catalog, tenant, "inbox:a.md", "one")
        assert catalog.set_source_subjects(tenant, source.source_id, ["team:b", "team:c"])
        assert catalog.set_source_subjects(other, source.source_id, ["team:x"]) is False
        assert catalog.set_source_subjects(tenant, f"src_{uuid.uuid4().hex}", ["x"]) is False
        assert catalog.set_source_tags(tenant, source.source_id, ["policy", "hr", "policy"])
        assert catalog.set_source_tags(other, source.source_id, ["stolen"]) is False
        [record] = catalog.versions_to_extract(tenant, 10)
        # every stage reads the source's current scope and tags (the indexes copy them)
        assert (record.subjects, record.tags) == (("team:b", "team:c"), ("hr", "policy"))
        assert catalog.set_source_tags(tenant, source.source_id, [])
        assert catalog.versions_to_extract(tenant, 10)[0].tags == ()

    def test_a_source_is_relocated_only_while_live_and_only_in_its_tenant(
        self, catalog: LifecycleCatalog, tenant: str, other: str
    ) -> None:
        source = stored(catalog, tenant, "connector:c1:old/name.md", "moved bytes")
        place = {"path": "new/name.md"}
        assert catalog.relocate_source(tenant, source.source_id, "new/name.md", place)
        assert catalog.relocate_source(other, source.source_id, "stolen.md", place) is False
        assert catalog.relocate_source(tenant, f"src_{uuid.uuid4().hex}", "x.md", place) is False
        [record] = catalog.versions_to_extract(tenant, 10)
        # the same version (no new bytes, nothing to extract again) under its new name
        assert (record.source_id, record.filename) == (source.source_id, "new/name.md")
        assert catalog.mark_source_deleting(tenant, source.source_id)
        assert catalog.relocate_source(tenant, source.source_id, "later.md", place) is False

    def test_the_inbox_mirror_lists_the_tenants_live_inbox_sources(
        self, catalog: LifecycleCatalog, tenant: str, other: str
    ) -> None:
        a = stored(catalog, tenant, "inbox:a.md", "one")
        b = stored(catalog, tenant, "inbox:sub/b.md", "two", subjects=("team:b",))
        stored(catalog, tenant, "api:c.md", "three")
        theirs = stored(catalog, other, "inbox:a.md", "one")
        assert catalog.inbox_sources(tenant) == {
            "inbox:a.md": (a.source_id, ("team:a",)),
            "inbox:sub/b.md": (b.source_id, ("team:b",)),
        }
        assert catalog.mark_source_deleting(tenant, b.source_id)
        assert catalog.inbox_sources(tenant) == {"inbox:a.md": (a.source_id, ("team:a",))}
        assert catalog.inbox_sources(other) == {"inbox:a.md": (theirs.source_id, ("team:a",))}

    def test_an_inbox_scan_is_the_tenants_own(
        self, catalog: LifecycleCatalog, tenant: str, other: str
    ) -> None:
        """What the hourly rescan asks: the folder as the last registration
        listed it, and whether it left files to try again. (Which files are
        due to be read again is the inbox connector's items':
        ConnectorCatalog.items_due.)"""
        assert catalog.inbox_scans([tenant, other]) == {}
        catalog.record_inbox_scan(tenant, "f1", False)
        catalog.record_inbox_scan(tenant, "f2", True)  # the last walk is the one kept
        assert catalog.inbox_scans([tenant, other]) == {tenant: ("f2", True)}
        assert catalog.inbox_scans([other]) == {}

    # tenant erasure ------------------------------------------------------------------------
    def test_erasing_a_tenant_removes_its_rows_and_only_its(
        self, catalog: LifecycleCatalog, tenant: str, other: str
    ) -> None:
        published(catalog, tenant, "inbox:a.md", f"{tenant} shared")
        stored(catalog, tenant, "inbox:b.md", "waiting")
        catalog.create_api_key(tenant, ["team:a"], "reader")
        theirs = stored(catalog, other, "inbox:x.md", f"{tenant} shared")
        assert catalog.tenant_blob_keys(other) == []  # shared with the tenant

        catalog.erase_tenant_rows(tenant)

        assert catalog.get_tenant(tenant) is None
        assert catalog.list_api_keys(tenant) == []
        assert catalog.counts(tenant) == TenantCounts(0, 0, 0, 0)
        assert catalog.versions_to_extract(tenant, 10) == []
        assert catalog.live_chunk_ids(tenant, None) == set()
        assert catalog.inbox_sources(tenant) == {}
        assert catalog.tenant_blob_keys(tenant) == []
        assert set(catalog.pending_work(tenant, MODEL_A).values()) == {0}
        # the other tenant keeps everything, and its bytes are now its own
        assert catalog.get_tenant(other) is not None
        assert [v.version_id for v in catalog.versions_to_extract(other, 10)] == [theirs.version_id]
        assert catalog.tenant_blob_keys(other) == [blob_key_for(sha(f"{tenant} shared"))]

    # the serving model ---------------------------------------------------------------------
    def test_switching_the_serving_model_is_a_compare_and_set(
        self, catalog: LifecycleCatalog, tenant: str
    ) -> None:
        assert catalog.previous_model(tenant) is None
        assert catalog.switch_serving_model(tenant, MODEL_B, expected_current=MODEL_B) is False
        assert catalog.switch_serving_model(tenant, MODEL_B, expected_current=MODEL_A) is True
        tenant_row = catalog.get_tenant(tenant)
        assert tenant_row is not None and tenant_row.active_model == MODEL_B
        assert catalog.previous_model(tenant) == MODEL_A
        # a writer that read the old model loses
        assert catalog.switch_serving_model(tenant, "model-c", expected_current=MODEL_A) is False
        tenant_row = catalog.get_tenant(tenant)
        assert tenant_row is not None and tenant_row.active_model == MODEL_B
        assert catalog.previous_model(tenant) == MODEL_A
        missing = f"lc-{uuid.uuid4().hex[:10]}"
        assert catalog.switch_serving_model(missing, MODEL_B, MODEL_A) is False
        assert catalog.previous_model(missing) is None

    def test_the_model_switched_away_from_retires_after_the_grace_period(
        self, catalog: LifecycleCatalog, tenant: str
    ) -> None:
        assert catalog.models_to_retire(tenant, grace_seconds=0) == []
        assert catalog.switch_serving_model(tenant, MODEL_B, MODEL_A)
        assert catalog.models_to_retire(tenant, grace_seconds=3600) == []  # rollback still offered
        assert catalog.models_to_retire(tenant, grace_seconds=0) == [MODEL_A]
        assert catalog.switch_serving_model(tenant, MODEL_A, MODEL_B)  # the rollback
        assert catalog.models_to_retire(tenant, grace_seconds=0) == [MODEL_B]
        assert catalog.switch_serving_model(tenant, MODEL_A, MODEL_A)  # onto itself
        assert catalog.models_to_retire(tenant, grace_seconds=0) == []

    def test_a_forgotten_model_has_neither_progress_nor_publication(
        self, catalog: LifecycleCatalog, tenant: str, other: str
    ) -> None:
        first, first_chunks = published(catalog, tenant, "inbox:a.md", "one", (MODEL_A, MODEL_B))
        _, theirs = published(catalog, other, "inbox:a.md", "one", (MODEL_A,))
        assert catalog.switch_serving_model(tenant, MODEL_B, MODEL_A)

        catalog.forget_model(tenant, MODEL_A)

        assert catalog.previous_model(tenant) is None
        assert catalog.models_to_retire(tenant, grace_seconds=0) == []
        # nothing is live for it any more: a later backfill starts from nothing
        assert catalog.live_chunk_ids(tenant, MODEL_A) == set()
        assert [b.version.version_id for b in catalog.batches_to_embed(tenant, MODEL_A, 10)] == [
            first.version_id
        ]
        assert catalog.pending_work(tenant, MODEL_A)["embed"] == 1
        assert catalog.publication_latency(tenant, MODEL_A) == []
        # the serving model and the other tenant keep theirs
        assert catalog.live_chunk_ids(tenant, MODEL_B) == ids(first_chunks)
        assert catalog.live_chunk_ids(other, MODEL_A) == ids(theirs)

        # a version only the forgotten model served is swept once replaced
        second, _ = chunked(catalog, tenant, "inbox:a.md", "two")
        indexed(catalog, second, MODEL_B)
        catalog.mark_published_many([second.version_id], MODEL_B)
        assert catalog.superseded_versions(tenant, None) == [first.version_id]


class TestPostgresLifecycleLedger(LifecycleContract):
    @pytest.fixture
    def catalog(self, platform: Platform, tenant: str, other: str) -> Iterator[LifecycleCatalog]:
        for name in (tenant, other):
            platform.catalog.ensure_tenant(name, name, MODEL_A)
        yield platform.catalog


class TestInMemoryLifecycleLedger(LifecycleContract):
    @pytest.fixture
    def catalog(self, tenant: str, other: str) -> Iterator[LifecycleCatalog]:
        fake = InMemoryPipelineCatalog()
        for name in (tenant, other):
            fake.ensure_tenant(name, name, MODEL_A)
        yield fake
