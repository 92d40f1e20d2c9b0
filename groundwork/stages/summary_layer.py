"""The summary layer: each chunked version's compiled summary page, the
tenant's compiled overview page, and the drift of both."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from groundwork.catalog import (
    SummaryDrift,
    SummaryLedger,
    VersionShard,
)
from groundwork.overview import (
    OVERVIEW_TOKENS,
    OverviewLedger,
    compile_overview,
    inputs_digest,
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
    shard: VersionShard | None = None,
) -> StageReport:
    """Compile the summary page of each chunked version that has none (or whose
    summary the drift check marked stale); only `shard`'s slice when given. The
    page's chunks are rows of the same version in the `summary` layer; the
    indexes take a version only once it is summarized, so both layers are
    published by the same pointer flip.
    `items` counts summary chunks, `skipped` generative summaries that fell
    back to extractive."""
    report = StageReport()
    started = time.monotonic()
    seen: set[str] = set()
    while pending := [
        item
        for item in catalog.versions_to_summarize(tenant_id, batch, shard)
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


def drift_share(drifted: int, compiled: int) -> float:
    """The drift rate: drifted over compiled (0 when nothing is compiled)."""
    return drifted / compiled if compiled else 0.0


@dataclass(frozen=True, slots=True)
class DriftRate:
    compiled: int  # current summaries (the denominator)
    drifted: tuple[SummaryDrift, ...]
    threshold: float
    marked: int  # marked for recompilation by this check

    @property
    def rate(self) -> float:
        return drift_share(len(self.drifted), self.compiled)

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


def compile_overview_page(
    ledger: OverviewLedger,
    tenant_id: str,
    count_tokens: Callable[[str], int],
    tokenizer: str,
    max_tokens: int = OVERVIEW_TOKENS,
) -> StageReport:
    """Recompile the tenant's overview page when its inputs changed since it
    was compiled (or the drift check marked it, or another tokenizer bounds it
    now); otherwise nothing is read but the inputs. A tenant with nothing
    published and no page gets none. `processed` is 1 when a page was written,
    `items` its statements."""
    report = StageReport()
    started = time.monotonic()
    record = ledger.overview_record(tenant_id)
    inputs = ledger.overview_inputs(tenant_id)
    unchanged = record is not None and (
        not record.stale
        and record.tokenizer == tokenizer
        and record.inputs_digest == inputs_digest(inputs)
    )
    if not unchanged and (record is not None or inputs):
        page = compile_overview(
            tenant_id, ledger.overview_sources(tenant_id), count_tokens, tokenizer, max_tokens
        )
        ledger.save_overview(page)
        report.processed, report.items = 1, len(page.statements)
    report.seconds = time.monotonic() - started
    return report


@dataclass(frozen=True, slots=True)
class OverviewDrift:
    """The overview pages' drift rate: a page drifted when what it would be
    compiled from now digests differently from what it was compiled from."""

    compiled: int  # stored pages (the denominator)
    drifted: int
    threshold: float
    marked: int

    @property
    def rate(self) -> float:
        return drift_share(self.drifted, self.compiled)

    @property
    def within_threshold(self) -> bool:
        return self.rate <= self.threshold


def check_overview_drift(
    ledger: OverviewLedger, tenant_id: str, threshold: float = DEFAULT_DRIFT_THRESHOLD
) -> OverviewDrift:
    """The share of the tenant's overview pages (one per tenant) whose sources
    changed since compilation; over `threshold` they are marked for
    recompilation (the overview stage's next run recompiles a marked page
    whatever its inputs). A page already marked counts as drifted until then."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"a drift threshold is a share in [0, 1], not {threshold}")
    record = ledger.overview_record(tenant_id)
    if record is None:
        return OverviewDrift(0, 0, threshold, 0)
    drifted = record.stale or record.inputs_digest != inputs_digest(
        ledger.overview_inputs(tenant_id)
    )
    found = OverviewDrift(1, int(drifted), threshold, 0)
    if found.within_threshold or record.stale:
        return found
    marked = ledger.mark_overview_stale(
        tenant_id,
        f"its sources changed since compilation ({found.rate:.0%} of overview pages drifted, "
        f"over the {threshold:.0%} threshold)",
    )
    return OverviewDrift(found.compiled, found.drifted, threshold, marked)
