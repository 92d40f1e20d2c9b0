"""What the pipeline has still to do, per tenant and stage: the operator's view
of backlog (metrics, health), from one read for every tenant with work (an
idle platform of a thousand tenants costs one query), and the freshness rule:
a tenant whose oldest waiting version has waited longer than the freshness
target is stale (the Dagster check `backlog_freshness` fails for it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from groundwork.catalog import StageProgress


@dataclass(frozen=True, slots=True)
class TenantBacklog:
    tenant_id: str
    model_key: str
    #: stage -> versions waiting (extract, chunk, summarize, keyword_index, embed, publish)
    stages: dict[str, int]
    #: seconds the oldest version with work has waited
    oldest_seconds: float


def pipeline_backlog(
    progress: StageProgress, clock: Callable[[], float] = time.time
) -> list[TenantBacklog]:
    now = clock()
    return [
        TenantBacklog(w.tenant_id, w.model_key, dict(w.stages), max(0.0, now - w.oldest_at))
        for w in sorted(progress.pending_work_all(), key=lambda w: w.tenant_id)
        if any(w.stages.values())
    ]


#: how long a registered version may wait for publication before its tenant's
#: backlog counts as stale: a run takes seconds to minutes (a 5,183-file tenant's
#: first ingest is the long case), so a quarter of an hour without catching up
#: is a stuck or starved pipeline, not a busy one (GROUNDWORK_FRESHNESS_TARGET_SECONDS)
FRESHNESS_TARGET_SECONDS = 900.0


def tenant_backlog(
    progress: StageProgress, tenant_id: str, clock: Callable[[], float] = time.time
) -> TenantBacklog | None:
    """The tenant's backlog, None when it has no work waiting."""
    return next((b for b in pipeline_backlog(progress, clock) if b.tenant_id == tenant_id), None)


def is_stale(backlog: TenantBacklog | None, target_seconds: float) -> bool:
    return backlog is not None and backlog.oldest_seconds > target_seconds
