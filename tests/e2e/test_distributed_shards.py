"""A large tenant's whole ingest in shards (issue #32): in the
tenant_ingest_distributed job every heavy stage (extraction, chunks,
summaries, keyword indexing, embedding) runs per slice of versions, so a
second worker takes half of each, and the run ends in the same state as the
single-host job's: the same chunks, one vector and one keyword document per
chunk, one publication. Run in process here (the job's own asset selection);
tests/e2e/test_several_hosts.py runs the job on two worker processes."""

from __future__ import annotations

from typing import Any

import dagster as dg
import pytest

from pipelines.definitions import ALL_ASSETS
from pipelines.jobs import tenant_ingest_distributed_job, tenant_ingest_job
from resources.composition.platform import Platform
from testbed.tenants import seed_tenant
from tests.e2e.helpers import resource

DOCUMENTS = {
    f"doc-{n}.md": f"# Doc {n}\n\nBody of document {n}.\n\n## Part two\n\n"
    + " ".join(f"word{n}x{i}" for i in range(60))
    + "\n"
    for n in range(10)
}


def _run(
    platform: Platform, index_prefix: str, prefix: str, selection: dg.AssetSelection
) -> tuple[str, dg.ExecuteInProcessResult]:
    tenant = seed_tenant(platform, prefix, DOCUMENTS)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenant", [tenant])
    result = dg.materialize(
        ALL_ASSETS,
        selection=selection,
        partition_key=tenant,
        instance=instance,
        resources={"groundwork": resource(index_prefix)},
    )
    assert result.success
    return tenant, result


def _chunks(platform: Platform, tenant: str) -> set[tuple[Any, ...]]:
    """What each source's chunks say, by file (ids differ between tenants)."""
    with platform.pool.connection() as conn:
        rows = conn.execute(
            "SELECT s.filename, c.layer, c.position, c.heading_path, c.body FROM chunks c "
            "JOIN sources s USING (source_id) WHERE c.tenant_id = %s",
            (tenant,),
        ).fetchall()
    return {tuple(r[:3]) + (tuple(r[3]), r[4]) for r in rows}


def _shard_reports(result: dg.ExecuteInProcessResult) -> list[dict[str, Any]]:
    return [
        {k: v.value for k, v in e.event_specific_data.metadata.items()}  # type: ignore[union-attr]
        for e in result.all_events
        if e.event_type_value == "STEP_OUTPUT" and "ingest_shard[" in (e.step_key or "")
    ]


def test_every_heavy_stage_runs_per_shard_and_ends_as_the_single_host_job(
    platform: Platform, index_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROUNDWORK_SHARD_VERSIONS", "4")
    single, _ = _run(
        platform,
        index_prefix,
        "single",
        tenant_ingest_job.selection - dg.AssetSelection.keys("source_registrations"),
    )
    sharded, result = _run(
        platform, index_prefix, "sharded", tenant_ingest_distributed_job.selection
    )

    steps = {str(e.step_key) for e in result.all_events if e.event_type_value == "STEP_SUCCESS"}
    # no tenant-wide step extracts, chunks or summarizes: the shards do
    assert not steps & {"extracted_documents", "chunks", "summary_layer"}, steps
    reports = _shard_reports(result)
    assert len(reports) == 3  # ceil(10 / 4)
    for stage in ("extracted", "chunked", "summarized", "keyword_versions", "embedded_versions"):
        per_shard = [int(r[stage]) for r in reports]
        assert sum(per_shard) == 10, (stage, per_shard)  # every version once
        assert sum(1 for n in per_shard if n > 0) > 1, (stage, per_shard)  # spread out
    # one publication after the shards: serving_index embedded nothing, published all ten
    [served] = [
        m.metadata
        for m in result.asset_materializations_for_node("serving_index")
        if m.asset_key == dg.AssetKey("serving_index")
    ]
    assert served["embedded"].value == 0 and served["processed"].value == 10
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["stores_agree"] is True

    # the same state as the single-host job's
    model = platform.settings.default_model_key
    assert _chunks(platform, sharded) == _chunks(platform, single) != set()
    for tenant in (single, sharded):
        live = platform.catalog.live_chunk_ids(tenant, model)
        assert platform.vector_index(model).chunk_ids(tenant) == live
        assert platform.keywords.chunk_ids(tenant) == live
    assert len(platform.catalog.live_chunk_ids(sharded, model)) == len(
        platform.catalog.live_chunk_ids(single, model)
    )
    for tenant in (single, sharded):
        assert platform.catalog.pending_work(tenant, model) == dict.fromkeys(
            platform.catalog.pending_work(tenant, model), 0
        )
