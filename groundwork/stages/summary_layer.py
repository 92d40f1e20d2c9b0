"""The summary layer: each chunked version's compiled summary page, and drift."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

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


#: The share of a tenant's compiled summaries that may have drifted before they
#: are marked for recompilation. Why not zero: a summary is extractive (its
#: source's lead sentences) and a re-chunk that changes a few raw chunks rarely
#: changes what it says, while each recompilation sends the version through both
#: indexes and publication again; past one in ten, the layer a model loads first
#: no longer describes the corpus and the cost is worth it.
DEFAULT_DRIFT_THRESHOLD = 0.10


@dataclass(frozen=True, slots=True)
class DriftRate:
    compiled: int  # current summaries (the denominator)
    drifted: tuple[SummaryDrift, ...]
    threshold: float
    marked: int  # marked for recompilation by this check

    @property
    def rate(self) -> float:
        return len(self.drifted) / self.compiled if self.compiled else 0.0

    @property
    def within_threshold(self) -> bool:
        return self.rate <= self.threshold


def check_summary_drift(
    catalog: SummaryLedger, tenant_id: str, threshold: float = DEFAULT_DRIFT_THRESHOLD
) -> DriftRate:
    """The drift rate: the share of current summaries whose raw chunks changed
    since compilation. Over `threshold`, the drifted ones are marked for
    recompilation (the summary stage's next run recompiles them); within it
    they are reported and served as they are."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"a drift threshold is a share in [0, 1], not {threshold}")
    drifted = tuple(catalog.summary_drift(tenant_id))
    found = DriftRate(catalog.compiled_summary_count(tenant_id), drifted, threshold, 0)
    if found.within_threshold or not drifted:
        return found
    marked = catalog.mark_summaries_stale(
        tenant_id,
        [d.version_id for d in drifted],
        f"the raw chunks changed since compilation ({found.rate:.0%} of summaries drifted, "
        f"over the {threshold:.0%} threshold)",
    )
    return DriftRate(found.compiled, drifted, threshold, marked)
