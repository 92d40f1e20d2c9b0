"""SummaryLedger conformance (the catalog's summary layer), run against the
PostgreSQL adapter and the in-memory fake.

The contract: a chunked version waits for its summary before the indexes take
it, so both layers of a version are indexed and published together; the
summary's chunks are rows of the same version in the `summary` layer (the raw
count and a re-chunk leave them alone); the drift check finds a summary whose
version's raw chunks changed since compilation (the digest the catalog
computes equals `groundwork.summaries.raw_digest`), marking it stale makes it
the summary stage's work again, and recompiling sends the version through the
indexes again while its published pointer stays; compiled summaries are read
behind the publication pointer, the tenant and the subjects."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from groundwork.catalog import SummaryLedger, VersionRecord
from groundwork.chunking import Chunk
from groundwork.ports import AccessScope
from groundwork.stages.summary_layer import check_summary_drift
from groundwork.summaries import CompiledSummary, SummaryTarget, compile_summary, raw_digest
from resources.composition.platform import Platform
from tests.conformance.pipeline_steps import (
    MODEL_A,
    PipelineLedger,
    chunks_of,
    extracted,
    ids,
    indexed,
)
from tests.fakes_catalog import InMemoryPipelineCatalog


def _chunked_only(
    ledger: PipelineLedger, tenant: str, origin: str, text: str, count: int = 2
) -> tuple[VersionRecord, list[Chunk]]:
    version_id = extracted(ledger, tenant, origin, text)
    [version] = [v for v, _ in ledger.versions_to_chunk(tenant, 10) if v.version_id == version_id]
    chunks = chunks_of(version, count, label=f"{text} sentence. More words here")
    ledger.replace_chunks(version, chunks)
    return version, chunks


def _summarize(
    ledger: PipelineLedger, tenant: str
) -> list[tuple[VersionRecord, CompiledSummary, list[Chunk]]]:
    done = []
    for version, raw in ledger.versions_to_summarize(tenant, 10):
        target = SummaryTarget(tenant, version.source_id, version.version_id, version.filename)
        summary, chunks = compile_summary(target, raw)
        ledger.save_summary(version, summary, chunks)
        done.append((version, summary, chunks))
    return done


class SummaryLedgerContract:
    @pytest.fixture
    def ledger(self) -> Iterator[PipelineLedger]:
        raise NotImplementedError

    @pytest.fixture
    def tenant(self) -> str:
        return f"sl-{uuid.uuid4().hex[:10]}"

    @pytest.fixture
    def other(self) -> str:
        return f"sl-{uuid.uuid4().hex[:10]}"

    def test_the_subject_is_the_port(self, ledger: PipelineLedger) -> None:
        assert isinstance(ledger, SummaryLedger)

    def test_a_chunked_version_waits_for_its_summary_before_the_indexes(
        self, ledger: PipelineLedger, tenant: str, other: str
    ) -> None:
        version, chunks = _chunked_only(ledger, tenant, "inbox:a.md", "alpha", count=3)
        assert ledger.batches_to_keyword_index(tenant, 10) == []
        assert ledger.batches_to_embed(tenant, MODEL_A, 10) == []
        [(listed, raw)] = ledger.versions_to_summarize(tenant, 10)
        assert listed.version_id == version.version_id
        assert [c.chunk_id for c in raw] == [c.chunk_id for c in chunks]
        assert [(c.body, c.content_hash) for c in raw] == [(c.body, c.content_hash) for c in chunks]
        assert ledger.versions_to_summarize(other, 10) == []
        assert ledger.pending_work(tenant, MODEL_A)["summarize"] == 1

        [(_, summary, pages)] = _summarize(ledger, tenant)
        assert pages and all(p.layer == "summary" for p in pages)
        assert ledger.versions_to_summarize(tenant, 10) == []
        assert ledger.pending_work(tenant, MODEL_A)["summarize"] == 0
        # both layers go to the indexes together, each chunk labelled with its layer
        [batch] = ledger.batches_to_keyword_index(tenant, 10)
        layers = {c.chunk_id: c.layer for c in batch.chunks}
        assert layers == {
            **dict.fromkeys(ids(chunks), "raw"),
            **dict.fromkeys(ids(pages), "summary"),
        }
        [embed] = ledger.batches_to_embed(tenant, MODEL_A, 10)
        assert {c.chunk_id for c in embed.chunks} == set(layers)
        # the documents' chunk count is the raw layer's
        assert ledger.counts(tenant).chunks == 3
        # a re-chunk of the raw layer leaves the page alone
        ledger.replace_chunks(version, chunks_of(version, 1, label="shorter"))
        [batch] = ledger.batches_to_keyword_index(tenant, 10)
        assert {c.chunk_id for c in batch.chunks} == {chunks[0].chunk_id} | ids(pages)
        assert summary.pointers == tuple(c.chunk_id for c in chunks)

    def test_drift_marks_a_summary_for_recompilation_and_recompiling_republishes(
        self, ledger: PipelineLedger, tenant: str, other: str
    ) -> None:
        version, chunks = _chunked_only(ledger, tenant, "inbox:a.md", "alpha")
        [(_, summary, pages)] = _summarize(ledger, tenant)
        indexed(ledger, version, MODEL_A)
        ledger.mark_published_many([version.version_id], MODEL_A)
        # the catalog's digest of the raw chunks is the compiler's: nothing drifted
        assert ledger.summary_drift(tenant) == []
        assert ledger.live_chunk_ids(tenant, MODEL_A) == ids(chunks) | ids(pages)

        changed = chunks_of(version, 2, label="rewritten text")
        ledger.replace_chunks(version, changed)
        [drift] = ledger.summary_drift(tenant)
        assert (drift.version_id, drift.source_id) == (version.version_id, version.source_id)
        assert drift.recorded_digest == summary.raw_digest
        assert drift.current_digest == raw_digest((c.chunk_id, c.content_hash) for c in changed)
        assert ledger.summary_drift(other) == []
        assert ledger.mark_summaries_stale(other, [version.version_id], "x") == 0

        assert ledger.mark_summaries_stale(tenant, [version.version_id], "raw changed") == 1
        assert ledger.mark_summaries_stale(tenant, [version.version_id], "raw changed") == 0
        assert ledger.summary_drift(tenant) == []  # marked: not reported twice
        assert ledger.pending_work(tenant, MODEL_A)["summarize"] == 1
        # still served as it was meanwhile
        assert ledger.live_chunk_ids(tenant, MODEL_A) == ids(changed) | ids(pages)

        [(_, again, _)] = _summarize(ledger, tenant)
        assert again.raw_digest == drift.current_digest
        assert ledger.summary_drift(tenant) == []
        # the new page goes through the indexes and publication again
        assert [b.version.version_id for b in ledger.batches_to_keyword_index(tenant, 10)] == [
            version.version_id
        ]
        assert ledger.versions_to_publish(tenant, MODEL_A) == []
        indexed(ledger, version, MODEL_A)
        assert [v.version_id for v in ledger.versions_to_publish(tenant, MODEL_A)] == [
            version.version_id
        ]
        ledger.mark_published_many([version.version_id], MODEL_A)
        assert ledger.pending_work(tenant, MODEL_A) == dict.fromkeys(
            ledger.pending_work(tenant, MODEL_A), 0
        )

    def test_the_drift_rate_counts_current_summaries_and_marks_over_its_threshold(
        self, ledger: PipelineLedger, tenant: str, other: str
    ) -> None:
        assert ledger.compiled_summary_count(tenant) == 0
        versions = [
            _chunked_only(ledger, tenant, f"inbox:{n}.md", f"topic {n}")[0] for n in range(4)
        ]
        _summarize(ledger, tenant)
        assert ledger.compiled_summary_count(tenant) == 4
        assert ledger.compiled_summary_count(other) == 0
        ledger.replace_chunks(versions[0], chunks_of(versions[0], 1, label="rewritten"))

        # one in four drifted: 25%, within a 30% threshold; reported, nothing marked
        tolerated = check_summary_drift(ledger, tenant, threshold=0.3)
        assert (tolerated.compiled, len(tolerated.drifted), tolerated.rate) == (4, 1, 0.25)
        assert tolerated.within_threshold and tolerated.marked == 0
        assert ledger.pending_work(tenant, MODEL_A)["summarize"] == 0

        # over a 20% threshold: the drifted summary is marked for recompilation
        over = check_summary_drift(ledger, tenant, threshold=0.2)
        assert not over.within_threshold and over.marked == 1
        assert ledger.pending_work(tenant, MODEL_A)["summarize"] == 1
        # a marked summary is still a current one: the denominator stays
        assert ledger.compiled_summary_count(tenant) == 4
        assert check_summary_drift(ledger, tenant, threshold=0.2).rate == 0.0
        nothing = check_summary_drift(ledger, other, threshold=0.2)
        assert (nothing.compiled, nothing.rate, nothing.within_threshold) == (0, 0.0, True)

    def test_compiled_summaries_are_read_behind_the_pointer_and_the_subjects(
        self, ledger: PipelineLedger, tenant: str, other: str
    ) -> None:
        version, chunks = _chunked_only(ledger, tenant, "inbox:a.md", "alpha")
        unpublished, _ = _chunked_only(ledger, tenant, "inbox:b.md", "beta")
        done = {v.version_id: s for v, s, _ in _summarize(ledger, tenant)}
        indexed(ledger, version, MODEL_A)
        ledger.mark_published_many([version.version_id], MODEL_A)
        sources = [version.source_id, unpublished.source_id]

        found = ledger.compiled_summaries(AccessScope(tenant, ("team:a",)), sources)
        assert list(found) == [version.source_id]  # only what is published
        page = found[version.source_id]
        assert (page.version_id, page.kind, page.model, page.stale) == (
            version.version_id,
            "extractive",
            "",
            False,
        )
        assert page.pointers == done[version.version_id].pointers == tuple(ids_in(chunks))
        assert page.text == done[version.version_id].text and "alpha" in page.text
        assert page.media_type == "text/markdown"
        # another subject, another tenant, no subjects: nothing
        assert ledger.compiled_summaries(AccessScope(tenant, ("team:b",)), sources) == {}
        assert ledger.compiled_summaries(AccessScope(other, ("team:a",)), sources) == {}
        assert ledger.compiled_summaries(AccessScope(tenant, ()), sources) == {}


def ids_in(chunks: list[Chunk]) -> list[str]:
    return [c.chunk_id for c in chunks]


class TestPostgresSummaryLedger(SummaryLedgerContract):
    @pytest.fixture
    def ledger(self, platform: Platform, tenant: str, other: str) -> Iterator[PipelineLedger]:
        for name in (tenant, other):
            platform.catalog.ensure_tenant(name, name, MODEL_A)
        yield platform.catalog


class TestInMemorySummaryLedger(SummaryLedgerContract):
    @pytest.fixture
    def ledger(self, tenant: str, other: str) -> Iterator[PipelineLedger]:
        catalog = InMemoryPipelineCatalog()
        for name in (tenant, other):
            catalog.ensure_tenant(name, name, MODEL_A)
        yield catalog
