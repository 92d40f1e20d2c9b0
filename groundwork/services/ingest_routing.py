"""Which ingest job takes a tenant's waiting work, and in how many shards.

The distributed job (tenant_ingest_distributed) pays the broker's dispatch for
every step (~1.5-2.5 s each on this machine, docs/several-hosts.md) and fans
out only above one shard's worth of versions; below that it is the same work
on one worker plus the dispatch. So a tenant whose waiting versions fit one
shard takes the one-process path (tenant_ingest) even where worker hosts are
configured, and only a tenant above the threshold is spread out. Whoever
requests ingest runs (a sensor, the API's trigger, a bench) asks this.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

SINGLE_HOST_JOB = "tenant_ingest"
DISTRIBUTED_JOB = "tenant_ingest_distributed"
#: at most this many shards per run (every step costs the executor its dispatch)
MAX_SHARDS = 256


def waiting_versions(work: Mapping[str, int]) -> int:
    """Versions still to take somewhere between extraction and the indexes
    (StageProgress.pending_work's counts): each waits in one of extract,
    chunk, summarize, or, summarized, for either index."""
    return (
        work["extract"]
        + work["chunk"]
        + work["summarize"]
        + max(work["embed"], work["keyword_index"])
    )


def shard_count(waiting: int, per_shard: int) -> int:
    """One shard up to `per_shard` waiting versions (a small tenant: no fan-out)."""
    return max(1, min(MAX_SHARDS, math.ceil(waiting / per_shard)))


def ingest_job(work: Mapping[str, int], per_shard: int, distributed: bool) -> str:
    """tenant_ingest_distributed only where worker hosts are configured and
    the tenant's waiting versions make more than one shard; otherwise
    tenant_ingest, whose one process has no per-step dispatch."""
    if distributed and shard_count(waiting_versions(work), per_shard) > 1:
        return DISTRIBUTED_JOB
    return SINGLE_HOST_JOB
