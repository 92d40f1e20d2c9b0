"""What the pipeline has still to do, per tenant and stage: the operator's view
of backlog (metrics, health), from one read for every tenant with work (an
idle platform of a thousand tenants costs one query)."""

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
