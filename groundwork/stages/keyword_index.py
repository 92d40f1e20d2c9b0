"""Keyword indexing: a version's chunks written hidden into the keyword index."""

from __future__ import annotations

import time

from groundwork.catalog import (
    StageProgress,
    VersionShard,
)
from groundwork.errors import DocumentRefused
from groundwork.ports import (
    KeywordIndex,
)
from groundwork.stages.report import StageReport, fail_version


def keyword_index_pending(
    catalog: StageProgress,
    keywords: KeywordIndex,
    tenant_id: str,
    batch: int = 200,
    shard: VersionShard | None = None,
) -> StageReport:
    """Write the tenant's summarized versions into the keyword index, hidden
    (only `shard`'s slice, when given). Documents are keyed by chunk id, so a
    retried shard rewrites a document in place, never beside itself."""
    report = StageReport()
    started = time.monotonic()
    while items := catalog.batches_to_keyword_index(tenant_id, batch, shard):
        # Written hidden, beside the published version's documents: those stay
        # searchable until publication switches, and leave after it.
        try:
            report.items += keywords.upsert([c for item in items for c in item.chunks])
            written = list(items)
        except DocumentRefused:
            # One version's text must not fail the others: write them one by
            # one and fail only the versions the index refuses. Anything that is
            # not a refusal (the engine down, overloaded) still fails the run.
            written = []
            for item in items:
                try:
                    report.items += keywords.upsert(list(item.chunks))
                except DocumentRefused as refused:
                    fail_version(catalog, item.version, str(refused), report)
                else:
                    written.append(item)
        catalog.mark_keyword_indexed_many([item.version.version_id for item in written])
        report.processed += len(written)
    report.seconds = time.monotonic() - started
    return report
