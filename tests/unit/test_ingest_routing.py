"""The routing rule (groundwork/services/ingest_routing.py): a tenant whose
waiting versions fit one shard takes tenant_ingest even where worker hosts are
configured; only a tenant above the threshold is spread out."""

from __future__ import annotations

from groundwork.services.ingest_routing import (
    DISTRIBUTED_JOB,
    SINGLE_HOST_JOB,
    ingest_job,
    shard_count,
    waiting_versions,
)

NOTHING = dict.fromkeys(("extract", "chunk", "summarize", "keyword_index", "embed", "publish"), 0)


def _work(**stages: int) -> dict[str, int]:
    return {**NOTHING, **stages}


def test_every_stage_before_the_indexes_counts_once_per_version() -> None:
    # a summarized version waits for both indexes: counted once, not twice
    assert waiting_versions(_work(extract=3, chunk=2, summarize=1, embed=4, keyword_index=4)) == 10
    assert waiting_versions(_work(embed=4, keyword_index=1)) == 4
    assert waiting_versions(_work(publish=7)) == 0  # publication is one step either way


def test_a_tenant_within_one_shard_takes_the_one_process_path() -> None:
    assert ingest_job(_work(extract=10), per_shard=500, distributed=True) == SINGLE_HOST_JOB
    assert ingest_job(_work(extract=500), per_shard=500, distributed=True) == SINGLE_HOST_JOB
    assert ingest_job(_work(extract=501), per_shard=500, distributed=True) == DISTRIBUTED_JOB
    assert ingest_job(_work(chunk=300, embed=300), per_shard=500, distributed=True) == (
        DISTRIBUTED_JOB
    )


def test_without_worker_hosts_every_tenant_is_one_process() -> None:
    assert ingest_job(_work(extract=10**6), per_shard=500, distributed=False) == SINGLE_HOST_JOB


def test_shards_are_bounded() -> None:
    assert shard_count(0, 500) == 1
    assert shard_count(501, 500) == 2
    assert shard_count(10**7, 500) == 256
