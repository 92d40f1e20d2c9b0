"""StageProgress conformance (the catalog's processing part): the contract in
groundwork.catalog, run against the PostgreSQL adapter and the in-memory fake.

The contract: only a stored, current version of a live source is work for
extraction; a claim is a compare-and-set on the processing state (an
`extracting` version may be claimed again: its worker died); an extraction is
saved as a value, a failure included, and a failed version (in extraction or
refused later by a store) leaves every stage's work; a version's chunks are
rows beside the published version's and a re-chunk drops the positions it no
longer has; keyword indexing is shared by every model, embedding and
publication are per model, and a version is ready to publish only when both
indexes hold it; a publication pointer moves only forward; superseded means
holding chunk rows while neither current nor published; dropping a
superseded version's chunks waits out the grace of a pointer that just left
it; the progress figures (pending work, staleness, latency, counts) say the
same as the lists.

Versions come into being through the RegistrationLedger (pending row, then the
compare-and-set to stored), so the suite drives one object serving both."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator

import pytest

from groundwork.catalog import (
    ChunkBatch,
    RegistrationLedger,
    StageProgress,
    TenantCounts,
    VersionShard,
    version_bucket,
)
from groundwork.documents import ExtractionFailure, FailureReason
from groundwork.stages.registration import blob_key_for
from resources.composition.platform import Platform
from tests.conformance.pipeline_steps import (
    MODEL_A,
    MODEL_B,
    PipelineLedger,
    begin,
    chunked,
    chunks_of,
    document,
    extracted,
    ids,
    indexed,
    published,
    sha,
    stored,
    summarized,
)
from tests.fakes_catalog import InMemoryPipelineCatalog


class StageProgressContract:
    @pytest.fixture
    def ledger(self) -> Iterator[PipelineLedger]:
        raise NotImplementedError

    @pytest.fixture
    def tenant(self) -> str:
        return f"sp-{uuid.uuid4().hex[:10]}"

    @pytest.fixture
    def other(self) -> str:
        return f"sp-{uuid.uuid4().hex[:10]}"

    # the contract ------------------------------------------------------------------
    def test_the_subject_is_the_port(self, ledger: PipelineLedger) -> None:
        assert isinstance(ledger, StageProgress)
        assert isinstance(ledger, RegistrationLedger)

    def test_only_a_stored_current_version_waits_for_extraction(
        self, ledger: PipelineLedger, tenant: str, other: str
    ) -> None:
        pending = begin(ledger, tenant, "inbox:a.md", "one")
        assert ledger.versions_to_extract(tenant, 10) == []  # bytes not stored yet
        assert ledger.mark_stored(pending.version_id)
        [record] = ledger.versions_to_extract(tenant, 10)
        assert record == dataclasses.replace(
            record,
            version_id=pending.version_id,
            tenant_id=tenant,
            source_id=pending.source_id,
            version_no=1,
            filename="a.md",
            media_type="text/markdown",
            sha256=sha("one"),
            size_bytes=3,
            blob_key=blob_key_for(sha("one")),
            subjects=("team:a",),
            state="stored",
            processing_state="pending",
            title=None,
            failure_reason=None,
            tags=(),
        )
        assert record.created_at is not None

        infected = begin(ledger, tenant, "inbox:bad.md", "infected")
        assert ledger.mark_quarantined(infected.version_id, "Eicar")
        replacement = stored(ledger, tenant, "inbox:a.md", "two")
        later = stored(ledger, tenant, "inbox:c.md", "three")
        # the replaced version is no longer current: only its successor is work
        assert [v.version_id for v in ledger.versions_to_extract(tenant, 10)] == [
            replacement.version_id,
            later.version_id,
        ]
        assert [v.version_no for v in ledger.versions_to_extract(tenant, 1)] == [2]
        assert ledger.versions_to_extract(other, 10) == []

    def test_a_claim_is_a_compare_and_set_on_the_processing_state(
        self, ledger: PipelineLedger, tenant: str
    ) -> None:
        first = stored(ledger, tenant, "inbox:a.md", "one")
        assert ledger.claim_extraction(first.version_id) is True
        [claimed] = ledger.versions_to_extract(tenant, 10)
        # a worker that died leaves its claim: the version is still work, and claimable
        assert claimed.processing_state == "extracting"
        assert ledger.claim_extraction(first.version_id) is True
        ledger.save_extraction(first.version_id, document("# A\n\none"))
        assert ledger.claim_extraction(first.version_id) is False
        assert ledger.versions_to_extract(tenant, 10) == []

        second = stored(ledger, tenant, "inbox:b.md", "two")
        assert ledger.claim_extraction(second.version_id)
        ledger.save_extraction(
            second.version_id, ExtractionFailure(FailureReason.ENCRYPTED, "password protected")
        )
        assert ledger.claim_extraction(second.version_id) is False
        assert ledger.versions_to_extract(tenant, 10) == []
        assert ledger.claim_extraction(f"ver_{uuid.uuid4().hex}") is False

    def test_an_extraction_is_saved_as_a_value_and_a_failure_goes_no_further(
        self, ledger: PipelineLedger, tenant: str
    ) -> None:
        good = stored(ledger, tenant, "inbox:good.md", "good")
        expected = document("# Travel policy\n\nBook early.\n\n| a | b |\n|---|---|\n| 1 | 2 |")
        assert ledger.claim_extraction(good.version_id)
        ledger.save_extraction(good.version_id, expected)
        bad = stored(ledger, tenant, "inbox:bad.pdf", "bad")
        assert ledger.claim_extraction(bad.version_id)
        ledger.save_extraction(bad.version_id, ExtractionFailure(FailureReason.MALFORMED, "broken"))

        [(record, saved)] = ledger.versions_to_chunk(tenant, 10)
        assert record.version_id == good.version_id
        assert (record.processing_state, record.title, record.failure_reason) == (
            "extracted",
            "Travel policy",
            None,
        )
        assert saved == expected
        assert ledger.counts(tenant).failed == 1
        assert ledger.pending_work(tenant, MODEL_A)["extract"] == 0

    def test_chunks_are_written_beside_the_published_version(
        self, ledger: PipelineLedger, tenant: str
    ) -> None:
        _, first_chunks = published(ledger, tenant, "inbox:a.md", "one", count=3)
        second, second_chunks = chunked(ledger, tenant, "inbox:a.md", "two", count=2)
        assert ledger.versions_to_chunk(tenant, 10) == []
        # the published version's rows are untouched until the pointer moves
        assert ledger.live_chunk_ids(tenant, MODEL_A) == ids(first_chunks)
        assert ledger.counts(tenant).chunks == 5
        [batch] = ledger.batches_to_keyword_index(tenant, 10)
        assert batch.version.version_id == second.version_id
        assert [c.chunk_id for c in batch.chunks] == [c.chunk_id for c in second_chunks]

    def test_a_rechunk_drops_the_positions_the_version_no_longer_has(
        self, ledger: PipelineLedger, tenant: str
    ) -> None:
        version, chunks = chunked(ledger, tenant, "inbox:a.md", "one", count=3)
        again = chunks_of(version, 2, label="rewritten")
        ledger.replace_chunks(version, again)
        [batch] = ledger.batches_to_keyword_index(tenant, 10)
        assert [c.chunk_id for c in batch.chunks] == [c.chunk_id for c in chunks[:2]]
        assert [c.content for c in batch.chunks] == [c.content for c in again]
        assert ledger.counts(tenant).chunks == 2

    def test_one_versions_batch_is_its_current_record_and_chunks(
        self, ledger: PipelineLedger, tenant: str
    ) -> None:
        """What a save that indexes its own version reads: only that version,
        whatever else the tenant has waiting, and only while it is current."""
        first = stored(ledger, tenant, "artifact:a", "one")
        stored(ledger, tenant, "inbox:other.md", "another document waiting")
        batch = ledger.version_batch(first.version_id)
        assert batch is not None and batch.chunks == ()
        assert (batch.version.version_id, batch.version.processing_state) == (
            first.version_id,
            "pending",
        )
        assert ledger.claim_extraction(first.version_id)
        ledger.save_extraction(first.version_id, document("# Title\n\nwords"))
        batch = ledger.version_batch(first.version_id)
        assert batch is not None and batch.version.processing_state == "extracted"
        chunks = chunks_of(batch.version, 2)
        ledger.replace_chunks(batch.version, chunks)
        batch = ledger.version_batch(first.version_id)
        assert batch is not None
        assert [c.chunk_id for c in batch.chunks] == [c.chunk_id for c in chunks]
        assert batch.chunks[0].content == chunks[0].content
        assert batch.version.title == "Title"
        # a version no longer current, pending bytes and unknown ids are no batch
        stored(ledger, tenant, "artifact:a", "two")
        assert ledger.version_batch(first.version_id) is None
        assert ledger.version_batch(begin(ledger, tenant, "inbox:p.md", "p").version_id) is None

    def test_a_batch_carries_what_the_indexes_need(
        self, ledger: PipelineLedger, tenant: str
    ) -> None:
        notes = stored(ledger, tenant, "inbox:notes.md", "notes")
        assert ledger.claim_extraction(notes.version_id)
        # an extraction without a title: the index shows the filename instead
        untitled = dataclasses.replace(document("plain words"), title="")
        ledger.save_extraction(notes.version_id, untitled)
        [(version, _)] = ledger.versions_to_chunk(tenant, 10)
        chunks = chunks_of(version, 2)
        ledger.replace_chunks(version, chunks)
        assert ledger.batches_to_keyword_index(tenant, 10) == []  # not summarized yet
        summarized(ledger, version, chunks)
        [batch] = ledger.batches_to_keyword_index(tenant, 10)
        assert batch == ChunkBatch(version, batch.chunks)
        first = batch.chunks[0]
        assert (first.chunk_id, first.tenant_id, first.source_id, first.version_id) == (
            chunks[0].chunk_id,
            tenant,
            notes.source_id,
            notes.version_id,
        )
        assert (first.subjects, first.media_type, first.title, first.tags) == (
            ("team:a",),
            "text/markdown",
            "notes.md",
            (),
        )
        assert first.content == "Intro\n\nbody 0 of 1" == chunks[0].content
        assert [c.content_hash for c in batch.chunks] == [c.content_hash for c in chunks]
        assert first.source_date == version.created_at

    def test_shards_split_the_waiting_versions_disjointly_by_version_id(
        self, ledger: PipelineLedger, tenant: str
    ) -> None:
        versions = [chunked(ledger, tenant, f"inbox:s{i}.md", f"s{i}")[0] for i in range(12)]
        everyone = sorted(v.version_id for v in versions)
        shards = [VersionShard(i, 3) for i in range(3)]
        for listing in (
            lambda shard: ledger.batches_to_embed(tenant, MODEL_A, 100, shard),
            lambda shard: ledger.batches_to_keyword_index(tenant, 100, shard),
        ):
            taken = [[b.version.version_id for b in listing(shard)] for shard in shards]
            assert sorted(v for part in taken for v in part) == everyone  # each once
            for shard, part in zip(shards, taken, strict=True):
                assert all(version_bucket(v, 3) == shard.index for v in part)
        # a shard's finished versions leave only its own listing
        first = [
            b.version.version_id for b in ledger.batches_to_embed(tenant, MODEL_A, 100, shards[0])
        ]
        for version_id in first:
            ledger.mark_embedded(version_id, tenant, MODEL_A)
        assert ledger.batches_to_embed(tenant, MODEL_A, 100, shards[0]) == []
        assert len(ledger.batches_to_embed(tenant, MODEL_A, 100)) == 12 - len(first)

    def test_shards_split_extraction_chunking_and_summaries_by_the_same_buckets(
        self, ledger: PipelineLedger, tenant: str
    ) -> None:
        shards = [VersionShard(i, 3) for i in range(3)]
        waiting = [stored(ledger, tenant, f"inbox:x{i}.md", f"x{i}").version_id for i in range(9)]

        def split(listing: object) -> list[list[str]]:
            taken = [listing(shard) for shard in shards]  # type: ignore[operator]
            assert sorted(v for part in taken for v in part) == sorted(waiting)  # each once
            for shard, part in zip(shards, taken, strict=True):
                assert all(version_bucket(v, 3) == shard.index for v in part)
            return taken

        split(lambda s: [v.version_id for v in ledger.versions_to_extract(tenant, 100, s)])
        for version_id in waiting:
            assert ledger.claim_extraction(version_id)
            ledger.save_extraction(version_id, document(f"# {version_id}\n\ntext"))
        split(lambda s: [v.version_id for v, _ in ledger.versions_to_chunk(tenant, 100, s)])
        for version, _ in ledger.versions_to_chunk(tenant, 100):
            ledger.replace_chunks(version, chunks_of(version, 2))
        split(lambda s: [v.version_id for v, _ in ledger.versions_to_summarize(tenant, 100, s)])
        # unsharded listings are unchanged: every waiting version
        assert len(ledger.versions_to_summarize(tenant, 100)) == 9

    def test_keyword_indexing_and_each_models_embedding_are_tracked_apart(
        self, ledger: PipelineLedger, tenant: str, other: str
    ) -> None:
        version, _ = chunked(ledger, tenant, "inbox:a.md", "one")
        waiting = [version.version_id]
        assert [
            b.version.version_id for b in ledger.batches_to_keyword_index(tenant, 10)
        ] == waiting
        assert [
            b.version.version_id for b in ledger.batches_to_embed(tenant, MODEL_A, 10)
        ] == waiting
        assert ledger.batches_to_keyword_index(other, 10) == []

        ledger.mark_embedded(version.version_id, tenant, MODEL_A)
        assert ledger.batches_to_embed(tenant, MODEL_A, 10) == []
        assert [
            b.version.version_id for b in ledger.batches_to_embed(tenant, MODEL_B, 10)
        ] == waiting
        # embedded but not in the keyword index: not ready to publish
        assert ledger.versions_to_publish(tenant, MODEL_A) == []

        ledger.mark_keyword_indexed_many([])
        ledger.mark_keyword_indexed_many(waiting)
        assert ledger.batches_to_keyword_index(tenant, 10) == []
        assert [v.version_id for v in ledger.versions_to_publish(tenant, MODEL_A)] == waiting
        assert ledger.versions_to_publish(tenant, MODEL_B) == []
        ledger.mark_published_many(waiting, MODEL_A)
        assert ledger.versions_to_publish(tenant, MODEL_A) == []

    def test_publication_serves_each_model_its_own_versions_and_never_moves_back(
        self, ledger: PipelineLedger, tenant: str
    ) -> None:
        older, _ = chunked(ledger, tenant, "inbox:a.md", "one")
        _, newer_chunks = published(ledger, tenant, "inbox:a.md", "two")
        other_source, other_chunks = chunked(ledger, tenant, "inbox:b.md", "three")
        indexed(ledger, other_source, MODEL_A, MODEL_B)
        assert ledger.live_chunk_ids(tenant, MODEL_A) == ids(newer_chunks)

        ledger.mark_published_many([older.version_id, other_source.version_id], MODEL_A)
        # the older version does not take its source back; the other source is live
        assert ledger.live_chunk_ids(tenant, MODEL_A) == ids(newer_chunks) | ids(other_chunks)
        assert ledger.live_chunk_ids(tenant, MODEL_B) == set()
        ledger.mark_published_many([other_source.version_id], MODEL_B)
        assert ledger.live_chunk_ids(tenant, MODEL_B) == ids(other_chunks)
        assert ledger.live_chunk_ids(tenant, None) == ids(newer_chunks) | ids(other_chunks)

    def test_a_failed_version_leaves_every_stages_work(
        self, ledger: PipelineLedger, tenant: str
    ) -> None:
        refused, _ = chunked(ledger, tenant, "inbox:refused.md", "one")
        ready, _ = chunked(ledger, tenant, "inbox:ready.md", "two")
        indexed(ledger, ready, MODEL_A)
        ledger.mark_version_failed(refused.version_id, FailureReason.UNINDEXABLE, "too long")
        ledger.mark_version_failed(ready.version_id, FailureReason.UNINDEXABLE, "refused")

        assert ledger.batches_to_keyword_index(tenant, 10) == []
        assert ledger.batches_to_embed(tenant, MODEL_A, 10) == []
        assert ledger.versions_to_publish(tenant, MODEL_A) == []
        assert ledger.versions_to_chunk(tenant, 10) == []
        assert ledger.versions_to_extract(tenant, 10) == []
        assert ledger.claim_extraction(refused.version_id) is False
        assert set(ledger.pending_work(tenant, MODEL_A).values()) == {0}
        assert ledger.oldest_unpublished_seconds(tenant, MODEL_A) == 0.0
        assert ledger.counts(tenant).failed == 2

    def test_superseded_means_holding_chunks_neither_current_nor_published(
        self, ledger: PipelineLedger, tenant: str, other: str
    ) -> None:
        first, _ = published(ledger, tenant, "inbox:a.md", "one", (MODEL_A, MODEL_B))
        second, _ = chunked(ledger, tenant, "inbox:a.md", "two")
        # the first is published, the second current: nothing to sweep
        assert ledger.superseded_versions(tenant, MODEL_A) == []
        assert ledger.superseded_versions(tenant, None) == []

        indexed(ledger, second, MODEL_A, MODEL_B)
        ledger.mark_published_many([second.version_id], MODEL_A)
        assert ledger.superseded_versions(tenant, MODEL_A) == [first.version_id]
        assert ledger.superseded_versions(tenant, MODEL_B) == []
        assert ledger.superseded_versions(tenant, None) == []  # model B still serves it

        ledger.mark_published_many([second.version_id], MODEL_B)
        assert ledger.superseded_versions(tenant, MODEL_B) == [first.version_id]
        assert ledger.superseded_versions(tenant, None) == [first.version_id]
        assert ledger.superseded_versions(other, None) == []

        # a version replaced before it was ever published is superseded too
        third, _ = chunked(ledger, tenant, "inbox:a.md", "three")
        stored(ledger, tenant, "inbox:a.md", "four")
        assert ledger.superseded_versions(tenant, None) == sorted(
            [first.version_id, third.version_id]
        )

    def test_dropping_chunks_waits_out_the_grace_of_a_pointer_that_just_left(
        self, ledger: PipelineLedger, tenant: str, other: str
    ) -> None:
        first, _ = published(ledger, tenant, "inbox:a.md", "one", count=3)
        second, second_chunks = published(ledger, tenant, "inbox:a.md", "two", count=2)
        assert ledger.superseded_versions(tenant, None) == [first.version_id]
        # the pointer left the first version just now: searches in flight may re-check it
        assert ledger.drop_version_chunks(tenant, [first.version_id], grace_seconds=3600) == 0
        assert ledger.drop_version_chunks(other, [first.version_id], grace_seconds=0) == 0
        assert ledger.drop_version_chunks(tenant, [], grace_seconds=0) == 0
        assert ledger.counts(tenant).chunks == 5

        assert ledger.drop_version_chunks(tenant, [first.version_id], grace_seconds=0) == 3
        assert ledger.superseded_versions(tenant, None) == []
        assert ledger.counts(tenant).chunks == 2
        assert ledger.live_chunk_ids(tenant, MODEL_A) == ids(second_chunks)

        # no pointer ever served this one: no grace to wait for
        never, _ = chunked(ledger, tenant, "inbox:a.md", "three", count=4)
        stored(ledger, tenant, "inbox:a.md", "four")
        assert ledger.drop_version_chunks(tenant, [never.version_id], grace_seconds=3600) == 4
        assert ledger.live_chunk_ids(tenant, MODEL_A) == ids(second_chunks)
        assert ledger.counts(tenant).chunks == 2

    def test_pending_work_counts_what_each_stage_has_left(
        self, ledger: PipelineLedger, tenant: str, other: str
    ) -> None:
        stored(ledger, tenant, "inbox:a.md", "stored")
        extracted(ledger, tenant, "inbox:b.md", "extracted")
        chunked(ledger, tenant, "inbox:c.md", "chunked")
        in_both, _ = chunked(ledger, tenant, "inbox:d.md", "indexed")
        indexed(ledger, in_both, MODEL_A)
        published(ledger, tenant, "inbox:e.md", "published")
        failed = stored(ledger, tenant, "inbox:f.md", "failed")
        assert ledger.claim_extraction(failed.version_id)
        ledger.save_extraction(failed.version_id, ExtractionFailure(FailureReason.EMPTY, ""))
        begin(ledger, tenant, "inbox:g.md", "bytes still on their way")
        # chunked, its summary not compiled: not yet work for the indexes
        unsummarized = extracted(ledger, tenant, "inbox:h.md", "unsummarized")
        [(version, _)] = [
            (v, d) for v, d in ledger.versions_to_chunk(tenant, 10) if v.version_id == unsummarized
        ]
        ledger.replace_chunks(version, chunks_of(version, 2))

        assert ledger.pending_work(tenant, MODEL_A) == {
            "extract": 1,
            "chunk": 1,
            "summarize": 1,
            "keyword_index": 1,
            "embed": 1,
            "publish": 4,
        }
        # another model has embedded and published nothing yet
        assert ledger.pending_work(tenant, MODEL_B) == {
            "extract": 1,
            "chunk": 1,
            "summarize": 1,
            "keyword_index": 1,
            "embed": 3,
            "publish": 5,
        }
        assert set(ledger.pending_work(other, MODEL_A).values()) == {0}

        # all tenants in one read: the same counts, for each tenant's serving
        # model (MODEL_A here); a tenant without work is absent
        mine = [w for w in ledger.pending_work_all() if w.tenant_id in (tenant, other)]
        assert [(w.tenant_id, w.model_key, w.stages) for w in mine] == [
            (tenant, MODEL_A, ledger.pending_work(tenant, MODEL_A))
        ]
        newest = mine[0].newest_at
        assert newest > 0
        stored(ledger, tenant, "inbox:h.md", "new work arrives")
        [again] = [w for w in ledger.pending_work_all() if w.tenant_id == tenant]
        assert again.newest_at > newest and again.stages["extract"] == 2
        # the oldest waiting version stays the first one: the backlog's age
        assert again.oldest_at == mine[0].oldest_at and 0 < again.oldest_at < again.newest_at

    def test_staleness_is_the_age_of_the_oldest_current_version_not_yet_served(
        self, ledger: PipelineLedger, tenant: str
    ) -> None:
        assert ledger.oldest_unpublished_seconds(tenant, MODEL_A) == 0.0
        version, _ = chunked(ledger, tenant, "inbox:a.md", "one")
        waited = ledger.oldest_unpublished_seconds(tenant, MODEL_A)
        assert 0.0 < waited < 600
        indexed(ledger, version, MODEL_A)
        ledger.mark_published_many([version.version_id], MODEL_A)
        assert ledger.oldest_unpublished_seconds(tenant, MODEL_A) == 0.0
        assert ledger.oldest_unpublished_seconds(tenant, MODEL_B) > 0.0

    def test_publication_latency_lists_recent_publications_of_the_model(
        self, ledger: PipelineLedger, tenant: str
    ) -> None:
        assert ledger.publication_latency(tenant, MODEL_A) == []
        published(ledger, tenant, "inbox:a.md", "one")
        published(ledger, tenant, "inbox:b.md", "two")
        latencies = ledger.publication_latency(tenant, MODEL_A)
        assert len(latencies) == 2 and all(0.0 < s < 600 for s in latencies)
        assert ledger.publication_latency(tenant, MODEL_B) == []
        assert ledger.publication_latency(tenant, MODEL_A, since_seconds=0) == []

    def test_counts(self, ledger: PipelineLedger, tenant: str, other: str) -> None:
        chunked(ledger, tenant, "inbox:a.md", "one", count=2)
        stored(ledger, tenant, "inbox:a.md", "two")
        begin(ledger, tenant, "inbox:b.md", "pending")
        infected = begin(ledger, tenant, "inbox:c.md", "infected")
        assert ledger.mark_quarantined(infected.version_id, "Eicar")
        failed = stored(ledger, tenant, "inbox:d.md", "failed")
        assert ledger.claim_extraction(failed.version_id)
        ledger.save_extraction(failed.version_id, ExtractionFailure(FailureReason.EMPTY, ""))
        assert ledger.counts(tenant) == TenantCounts(sources=4, versions=5, failed=1, chunks=2)
        assert ledger.counts(other) == TenantCounts(0, 0, 0, 0)


class TestPostgresStageProgress(StageProgressContract):
    @pytest.fixture
    def ledger(self, platform: Platform, tenant: str, other: str) -> Iterator[PipelineLedger]:
        for name in (tenant, other):
            platform.catalog.ensure_tenant(name, name, MODEL_A)
        yield platform.catalog


class TestInMemoryStageProgress(StageProgressContract):
    @pytest.fixture
    def ledger(self, tenant: str, other: str) -> Iterator[PipelineLedger]:
        catalog = InMemoryPipelineCatalog()
        for name in (tenant, other):
            catalog.ensure_tenant(name, name, MODEL_A)
        yield catalog
