"""The summary layer: each chunked version's compiled summary page, and drift."""

from __future__ import annotations

import time
from collections.abc import Callable

from groundwork.catalog import (
    SummaryDrift,
    SummaryLedger,
)
from groundwork.stages.report import StageReport
from groundwork.summaries import Summarizer, SummaryTarget, compile_summary


def summarize_pending(
    catalog: SummaryLedger,
    tenant_id: str,
    count_tokens: Callable[[str], int],
    summarizer: Summarizer | None = None,
    max_tokens: int = 256,
    batch: int = 200,
) -> StageReport:
    """Compile the summary page of each chunked version that has none (or whose
    summary the drift check marked stale). The page's chunks are rows of the
    same version in the `summary` layer; the indexes take a version only once
    it is summarized, so both layers are published by the same pointer flip.
    `items` counts summary chunks, `skipped` generative summaries that fell
    back to extractive."""
    report = StageReport()
    started = time.monotonic()
    seen: set[str] = set()
    while pending := [
        item
        for item in catalog.versions_to_summarize(tenant_id, batch)
        if item[0].version_id not in seen
    ]:
        for version, raw in pending:
            seen.add(version.version_id)
            target = SummaryTarget(
                tenant_id, version.source_id, version.version_id, version.title or version.filename
            )
            summary, chunks = compile_summary(target, raw, summarizer, count_tokens, max_tokens)
            catalog.save_summary(version, summary, chunks)
            report.processed += 1
            report.items += len(chunks)
            if summarizer is not None and summarizer.kind != summary.kind:
                # labelled extractive on the version; counted so the run shows it
                report.skipped += 1
    report.seconds = time.monotonic() - started
    return report


def summary_drift(catalog: SummaryLedger, tenant_id: str) -> list[SummaryDrift]:
    """Find summaries whose raw chunks changed since compilation and mark them
    for recompilation (the summary stage recompiles them on its next run)."""
    drifted = catalog.summary_drift(tenant_id)
    if drifted:
        catalog.mark_summaries_stale(
            tenant_id,
            [d.version_id for d in drifted],
            "the raw chunks changed since the summary was compiled",
        )
    return drifted
