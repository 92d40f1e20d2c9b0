"""The code location loads; sensors turn inbox changes and stored work into runs."""

from __future__ import annotations

import uuid

import dagster as dg

from groundwork.pipeline import register_file
from pipelines.definitions import defs
from pipelines.sensors import inbox_sensor, pending_work_sensor
from resources.platform import Platform
from tests.e2e.helpers import resource, write_inbox


def test_definitions_load_with_jobs_sensors_and_checks() -> None:
    repository = defs.get_repository_def()
    assert {j.name for j in repository.get_all_jobs()} >= {
        "tenant_ingest",
        "model_publish",
        "purge_deleted",
    }
    assert {s.name for s in repository.sensor_defs} == {
        "inbox_sensor",
        "pending_work_sensor",
        "deletion_sensor",
        "publish_after_ingest",
        "evaluate_after_publish",
    }
    graph = repository.asset_graph
    assert (
        dg.AssetCheckKey(dg.AssetKey("published_index"), "stores_agree") in graph.asset_check_keys
    )
    groups = {graph.get(k).group_name for k in graph.get_all_asset_keys()}
    assert groups == {"ingest", "extract", "chunk", "index", "publish", "lifecycle", "evaluate"}
    assert (
        dg.AssetCheckKey(dg.AssetKey("retrieval_quality"), "relevance_gate")
        in graph.asset_check_keys
    )
    assert (
        dg.AssetCheckKey(dg.AssetKey("deletion_sweep"), "no_tombstoned_chunks_remain")
        in graph.asset_check_keys
    )


def test_inbox_sensor_adds_partitions_requests_runs_and_is_quiet_when_unchanged(
    platform: Platform, index_prefix: str
) -> None:
    tenant = f"s-{uuid.uuid4().hex[:8]}"
    write_inbox(platform.settings.inbox_dir, tenant, {"a.md": "# A\n\ntext\n"})
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(
            instance=instance, resources={"groundwork": resource(index_prefix)}
        )
        result = inbox_sensor(context)
        assert isinstance(result, dg.SensorResult)
        requested = {r.partition_key for r in result.run_requests or []}
        assert tenant in requested
        added = [p for req in result.dynamic_partitions_requests or [] for p in req.partition_keys]
        assert tenant in added
        again = inbox_sensor(
            dg.build_sensor_context(
                instance=instance,
                cursor=result.cursor,
                resources={"groundwork": resource(index_prefix)},
            )
        )
        assert tenant not in {r.partition_key for r in again.run_requests or []}
        write_inbox(platform.settings.inbox_dir, tenant, {"b.md": "# B\n\nmore\n"})
        changed = inbox_sensor(
            dg.build_sensor_context(
                instance=instance,
                cursor=result.cursor,
                resources={"groundwork": resource(index_prefix)},
            )
        )
        assert tenant in {r.partition_key for r in changed.run_requests or []}


def test_pending_work_sensor_requests_ingest_for_api_uploads(
    platform: Platform, index_prefix: str
) -> None:
    tenant = _tenant_with_an_upload(platform)
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(
            instance=instance, resources={"groundwork": resource(index_prefix)}
        )
        result = pending_work_sensor(context)
        mine = [r for r in result.run_requests or [] if r.partition_key == tenant]
        assert len(mine) == 1 and mine[0].job_name == "tenant_ingest"


def test_pending_work_sensor_skips_a_partition_with_a_run_in_progress(
    platform: Platform, index_prefix: str
) -> None:
    tenant = _tenant_with_an_upload(platform)
    with dg.instance_for_test() as instance:
        instance.add_run(
            dg.DagsterRun(
                job_name="tenant_ingest",
                run_id=uuid.uuid4().hex,
                status=dg.DagsterRunStatus.STARTED,
                tags={"dagster/partition": tenant},
            )
        )
        context = dg.build_sensor_context(
            instance=instance, resources={"groundwork": resource(index_prefix)}
        )
        result = pending_work_sensor(context)
        assert tenant not in {r.partition_key for r in result.run_requests or []}


def _tenant_with_an_upload(platform: Platform) -> str:
    """A tenant with one registered version that no stage has processed yet."""
    tenant = f"w-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant,
        origin="api:x.md",
        filename="x.md",
        data=b"# X\n\nhello\n",
        subjects=[f"tenant:{tenant}"],
        media_type="text/markdown",
    )
    return tenant


def test_evaluation_follows_publication_only_for_tenants_with_a_suite(
    platform: Platform, index_prefix: str, tmp_path
) -> None:
    from evals.suite import EvalSuite
    from pipelines.sensors import evaluate_after_publish
    from resources.postgres.eval_runs import PostgresEvalRuns

    with_suite, without = (f"s-{uuid.uuid4().hex[:8]}" for _ in range(2))
    for tenant in (with_suite, without):
        platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    PostgresEvalRuns(platform.pool).set_suite(with_suite, EvalSuite(beir_folder=str(tmp_path)))
    model = platform.settings.default_model_key
    with dg.instance_for_test() as instance:
        for tenant, expected in ((with_suite, True), (without, False)):
            run = dg.DagsterRun(
                job_name="model_publish",
                run_id=uuid.uuid4().hex,
                tags={
                    "dagster/partition": f"{model}|{tenant}",
                    "dagster/partition/tenant": tenant,
                    "dagster/partition/embedding_model": model,
                },
            )
            context = dg.build_run_status_sensor_context(
                sensor_name="evaluate_after_publish",
                dagster_event=dg.DagsterEvent(
                    event_type_value="PIPELINE_SUCCESS", job_name="model_publish"
                ),
                dagster_instance=instance,
                dagster_run=run,
                resources={"groundwork": resource(index_prefix)},
            )
            result = evaluate_after_publish(context)
            if expected:
                assert isinstance(result, dg.RunRequest)
                assert result.partition_key == dg.MultiPartitionKey(
                    {"tenant": tenant, "embedding_model": model}
                )
            else:
                assert isinstance(result, dg.SkipReason) and "no eval suite" in str(
                    result.skip_message
                )
