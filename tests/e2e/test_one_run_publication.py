"""A new file is searchable after one run of the ingest job: the serving model's
embeddings and publication happen in the same run (a second run meant a second
sensor hop and a second worker start, most of the inbox -> searchable time).
The per-model assets' history stays whole: the run records their
materializations for the serving model's partition."""

from __future__ import annotations

import uuid

import dagster as dg

from assets.partitions import tenant_model_key
from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import SearchMode, SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found
from pipelines.definitions import build_definitions
from resources.composition.platform import Platform
from tests.e2e.helpers import resource, write_inbox


def test_one_ingest_run_makes_a_new_file_searchable_and_records_each_stage(
    platform: Platform, index_prefix: str
) -> None:
    tenant = f"o-{uuid.uuid4().hex[:8]}"
    marker = f"zq{uuid.uuid4().hex[:10]}"
    write_inbox(
        platform.settings.inbox_dir, tenant, {"fresh.md": f"# Fresh\n\nThe marker is {marker}.\n"}
    )
    model = platform.settings.default_model_key
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenant", [tenant])
    job = build_definitions(resource(index_prefix)).resolve_job_def("tenant_ingest")
    result = job.execute_in_process(partition_key=tenant, instance=instance)
    assert result.success

    scope = AccessScope(tenant, (f"tenant:{tenant}",))
    for mode in (SearchMode.KEYWORD, SearchMode.VECTOR, SearchMode.HYBRID):
        found = hybrid_search(
            scope, SearchRequest(marker, mode=mode), platform.search_engines(model)
        )
        assert isinstance(found, Found) and found.hits, mode
        assert marker in found.hits[0].chunk.body

    partition = str(tenant_model_key(tenant, model))
    for asset in ("embeddings", "published_index"):
        recorded = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]),
            limit=1,
        ).records
        assert recorded, f"{asset} has no materialization for {partition}"
        assert recorded[0].run_id == result.run_id
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks.get("stores_agree") is True and checks.get("fresh_enough") is True


def test_the_second_hop_is_gone() -> None:
    """No sensor chains a publication run after an ingest run any more."""
    repository = build_definitions().get_repository_def()
    assert "publish_after_ingest" not in {s.name for s in repository.sensor_defs}
    ingest = repository.get_job("tenant_ingest")
    assert dg.AssetKey("serving_index") in ingest.asset_layer.executable_asset_keys
