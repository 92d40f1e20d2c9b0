"""OverviewLedger conformance (groundwork/overview.py), run against the
PostgreSQL catalog (the only adapter; there is no fake).

The contract: the inputs are the tenant's live sources with a version
published for its serving model, each with its summary's compile stamp (a
new published version or a recompiled summary changes them, another tenant's
or an unpublished source is not among them); the sources carry titles,
compiled summaries, headings and drill-down ids; a saved page replaces the one
before and is not stale; marking is once; a page is read only through a scope,
with the statements of sources it may read and that are still live."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from groundwork.catalog import VersionRecord
from groundwork.overview import OverviewLedger, compile_overview, inputs_digest
from groundwork.ports import AccessScope
from groundwork.summaries import SummaryTarget, compile_summary
from resources.composition.platform import Platform
from tests.conformance.pipeline_steps import (
    MODEL_A,
    PipelineLedger,
    chunks_of,
    extracted,
    indexed,
)


def _published(ledger: PipelineLedger, tenant: str, origin: str, text: str) -> VersionRecord:
    """A version chunked, summarized (a real page), indexed and published for MODEL_A."""
    version_id = extracted(ledger, tenant, origin, text)
    [version] = [v for v, _ in ledger.versions_to_chunk(tenant, 10) if v.version_id == version_id]
    chunks = chunks_of(version, 2, label=f"{text} sentence. More words here")
    ledger.replace_chunks(version, chunks)
    for listed, raw in ledger.versions_to_summarize(tenant, 10):
        target = SummaryTarget(tenant, listed.source_id, listed.version_id, listed.filename)
        summary, pages = compile_summary(target, raw)
        ledger.save_summary(listed, summary, pages)
    indexed(ledger, version, MODEL_A)
    ledger.mark_published_many([version.version_id], MODEL_A)
    return version


class OverviewLedgerContract:
    @pytest.fixture
    def ledger(self) -> Iterator[PipelineLedger]:
        raise NotImplementedError

    @pytest.fixture
    def tenant(self) -> str:
        return f"ol-{uuid.uuid4().hex[:10]}"

    @pytest.fixture
    def other(self) -> str:
        return f"ol-{uuid.uuid4().hex[:10]}"

    def test_the_subject_is_the_port(self, ledger: PipelineLedger) -> None:
        assert isinstance(ledger, OverviewLedger)

    def test_the_inputs_are_the_published_versions_and_their_summaries(
        self, ledger: PipelineLedger, tenant: str, other: str
    ) -> None:
        overviews: OverviewLedger = ledger  # type: ignore[assignment]
        alpha = _published(ledger, tenant, "inbox:alpha.md", "alpha")
        _published(ledger, other, "inbox:other.md", "other")
        extracted(ledger, tenant, "inbox:waiting.md", "waiting")  # not published: not an input
        [found] = overviews.overview_inputs(tenant)
        assert (found.source_id, found.version_id) == (alpha.source_id, alpha.version_id)
        assert found.summary_stamp != ""
        [source] = overviews.overview_sources(tenant)
        assert source.input == found
        # the extracted title (the document heading), else the filename
        assert source.title == "inbox:alpha.md" and source.media_type == "text/markdown"
        assert "alpha sentence" in source.summary and source.pointers
        before = inputs_digest([found])
        # the summary recompiled: another stamp, another digest
        [(version, raw)] = _resummarize(ledger, tenant, alpha)
        assert version.version_id == alpha.version_id and raw
        assert inputs_digest(overviews.overview_inputs(tenant)) != before

    def test_a_page_is_saved_whole_marked_once_and_read_through_a_scope(
        self, ledger: PipelineLedger, tenant: str, other: str
    ) -> None:
        overviews: OverviewLedger = ledger  # type: ignore[assignment]
        assert overviews.overview_record(tenant) is None
        assert overviews.overview_page(AccessScope(tenant, ("team:a",))) is None
        alpha = _published(ledger, tenant, "inbox:alpha.md", "alpha")
        beta = _published(ledger, tenant, "inbox:beta.md", "beta")
        page = compile_overview(tenant, overviews.overview_sources(tenant), tokenizer=MODEL_A)
        overviews.save_overview(page)
        record = overviews.overview_record(tenant)
        assert record is not None and record.statements == ()
        assert (record.inputs_digest, record.source_count, record.tokens, record.tokenizer) == (
            page.inputs_digest,
            2,
            page.tokens,
            MODEL_A,
        )
        assert record.compiled_at and record.stale is False
        read = overviews.overview_page(AccessScope(tenant, ("team:a",)))
        assert read is not None and read.statements == page.statements
        # marked once; a new save clears the mark
        assert overviews.mark_overview_stale(tenant, "drifted") == 1
        assert overviews.mark_overview_stale(tenant, "drifted") == 0
        assert overviews.overview_record(tenant).stale is True  # type: ignore[union-attr]
        overviews.save_overview(page)
        assert overviews.overview_record(tenant).stale is False  # type: ignore[union-attr]
        # the scope: another subject, another tenant, no subjects read nothing of it
        assert overviews.overview_page(AccessScope(tenant, ("team:b",))).statements == ()  # type: ignore[union-attr]
        assert overviews.overview_page(AccessScope(other, ("team:a",))) is None
        assert overviews.overview_page(AccessScope(tenant, ())) is None
        # a re-scoped or deleted source's statement is left out at once
        assert ledger.set_source_subjects(tenant, beta.source_id, ["team:b"])
        [left] = overviews.overview_page(AccessScope(tenant, ("team:a",))).statements  # type: ignore[union-attr]
        assert left.source_id == alpha.source_id
        assert ledger.mark_source_deleting(tenant, alpha.source_id)
        assert overviews.overview_page(AccessScope(tenant, ("team:a",))).statements == ()  # type: ignore[union-attr]
        # a save replaces every statement
        overviews.save_overview(compile_overview(tenant, [], tokenizer=MODEL_A))
        assert overviews.overview_page(AccessScope(tenant, ("team:b",))).statements == ()  # type: ignore[union-attr]


def _resummarize(
    ledger: PipelineLedger, tenant: str, version: VersionRecord
) -> list[tuple[VersionRecord, list[object]]]:
    """Mark the version's summary stale and compile it again (a later stamp)."""
    assert ledger.mark_summaries_stale(tenant, [version.version_id], "test") == 1
    done: list[tuple[VersionRecord, list[object]]] = []
    for listed, raw in ledger.versions_to_summarize(tenant, 10):
        target = SummaryTarget(tenant, listed.source_id, listed.version_id, listed.filename)
        summary, pages = compile_summary(target, raw)
        ledger.save_summary(listed, summary, pages)
        done.append((listed, list(raw)))
    return done


class TestPostgresOverviewLedger(OverviewLedgerContract):
    @pytest.fixture
    def ledger(self, platform: Platform, tenant: str, other: str) -> Iterator[PipelineLedger]:
        for name in (tenant, other):
            platform.catalog.ensure_tenant(name, name, MODEL_A)
        yield platform.catalog
