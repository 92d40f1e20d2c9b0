"""The code location loads; sensors turn inbox changes and stored work into runs."""

from __future__ import annotations

import uuid

import dagster as dg
import pytest

from groundwork.stages.registration import register_file
from pipelines.definitions import defs
from pipelines.sensors import inbox_sensor, pending_work_sensor
from resources.composition.platform import Platform
from testbed.tenants import register_markdown
from tests.e2e.helpers import resource, write_inbox


def test_definitions_load_with_jobs_sensors_and_checks() -> None:
    repository = defs().get_repository_def()
    assert {j.name for j in repository.get_all_jobs()} >= {
        "tenant_ingest",
        "model_publish",
        "purge_deleted",
        "connector_pass",
    }
    assert {s.name for s in repository.sensor_defs} == {
        "inbox_sensor",
        "pending_work_sensor",
        "deletion_sensor",
        "evaluate_after_publish",
        "tenant_partitions_sensor",
        "s3_connector_sensor",
        "fsspec_connector_sensor",
        "web_connector_sensor",
        "git_connector_sensor",
        "connector_ingest_sensor",
    }  # run_traces_sensor only with tracing on: tests/e2e/test_idle_tracing.py
    graph = repository.asset_graph
    assert (
        dg.AssetCheckKey(dg.AssetKey("published_index"), "stores_agree") in graph.asset_check_keys
    )
    # a stage is one place: each asset's group is the name of the module that defines it
    # (assets/<stage>.py, group <stage>, core groundwork/stages/<stage>.py where one exists)
    from pipelines.definitions import STAGE_MODULES

    for module in STAGE_MODULES:
        stage = module.__name__.rsplit(".", 1)[1]
        for asset in module.defs.assets or ():
            assert set(asset.group_names_by_key.values()) == {stage}, (stage, asset)
    assert {graph.get(k).group_name for k in graph.get_all_asset_keys()} == {
        m.__name__.rsplit(".", 1)[1] for m in STAGE_MODULES
    }
    # the drift check runs in the ingest run, after the summaries it checks
    drift = dg.AssetCheckKey(dg.AssetKey("summary_layer"), "summary_drift")
    assert drift in graph.asset_check_keys
    ingest = repository.get_job("tenant_ingest")
    assert drift in ingest.asset_layer.asset_graph.asset_check_keys
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


def test_an_erased_tenant_stays_erased_and_its_partition_goes(
    platform: Platform, index_prefix: str
) -> None:
    """The defect: `ensure_tenant` in the registration asset brought an erased
    tenant back on the hourly rescan. Erasure removes the inbox copy too, the
    rescan creates nothing, and the reconciling sensor deletes the partition."""
    from assets.registration import source_registrations
    from groundwork.lifecycle import erase_tenant
    from pipelines.definitions import ALL_ASSETS
    from pipelines.sensors import tenant_partitions_sensor

    tenant = f"e-{uuid.uuid4().hex[:8]}"
    write_inbox(platform.settings.inbox_dir, tenant, {"a.md": "# A\n\ntext\n"})
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("tenant", [tenant])
        dg.materialize(
            ALL_ASSETS,
            selection=[source_registrations],
            partition_key=tenant,
            instance=instance,
            resources={"groundwork": resource(index_prefix)},
        )
        assert platform.catalog.get_tenant(tenant) is not None
        erase_tenant(
            platform.catalog,
            platform.indexes(),
            platform.blobs,
            tenant,
            inbox_root=platform.settings.inbox_dir,
        )
        assert not (platform.settings.inbox_dir / tenant).exists()
        rescan = dg.materialize(
            ALL_ASSETS,
            selection=[source_registrations],
            partition_key=tenant,
            instance=instance,
            resources={"groundwork": resource(index_prefix)},
        )
        assert rescan.success
        assert platform.catalog.get_tenant(tenant) is None
        result = tenant_partitions_sensor(
            dg.build_sensor_context(
                instance=instance, resources={"groundwork": resource(index_prefix)}
            )
        )
        deleted = [
            p
            for req in result.dynamic_partitions_requests or []
            if isinstance(req, dg.DeleteDynamicPartitionsRequest)
            for p in req.partition_keys
        ]
        assert tenant in deleted
        # a tenant the catalog knows (created through the API) gets its partition
        api_tenant = _tenant_with_an_upload(platform)
        result = tenant_partitions_sensor(
            dg.build_sensor_context(
                instance=instance, resources={"groundwork": resource(index_prefix)}
            )
        )
        added = [
            p
            for req in result.dynamic_partitions_requests or []
            if isinstance(req, dg.AddDynamicPartitionsRequest)
            for p in req.partition_keys
        ]
        assert api_tenant in added and tenant not in added


def test_a_skipped_gate_is_never_green_and_freshness_is_a_check(
    platform: Platform, index_prefix: str
) -> None:
    """The defect: a tenant without an eval suite got relevance_gate passed=True,
    which the UI shows green although nothing was measured."""
    from assets.evals import retrieval_quality
    from assets.partitions import tenant_model_key
    from pipelines.definitions import ALL_ASSETS
    from tests.e2e.helpers import run_pipeline

    tenant = f"g-{uuid.uuid4().hex[:8]}"
    write_inbox(platform.settings.inbox_dir, tenant, {"a.md": "# A\n\nfresh text\n"})
    model = platform.settings.default_model_key
    with dg.instance_for_test() as instance:
        runs = run_pipeline(instance, tenant, model, resource(index_prefix))
        fresh = [
            c
            for c in runs[1].get_asset_check_evaluations()
            if c.asset_check_key.name == "fresh_enough"
        ]
        assert len(fresh) == 1 and fresh[0].passed
        assert fresh[0].metadata["oldest_unpublished_seconds"].value == 0
        gated = dg.materialize(
            ALL_ASSETS,
            selection=[retrieval_quality],
            partition_key=tenant_model_key(tenant, model),
            instance=instance,
            resources={"groundwork": resource(index_prefix)},
        )
        assert gated.success  # a tenant without a suite does not fail its run
        checks = gated.get_asset_check_evaluations()
        assert {c.check_name for c in checks} == {"relevance_gate", "relevance_regression"}
        for gate in checks:
            assert gate.passed is False and gate.severity == dg.AssetCheckSeverity.WARN
            assert "skipped" in gate.metadata["status"].value


def test_every_job_runs_in_one_process_set_once() -> None:
    """One process per run on one host; only the distributed ingest job names
    Dagster's Celery executor (its steps run on worker hosts)."""
    repository = defs().get_repository_def()
    for job in repository.get_all_jobs():
        if job.name.startswith("__"):
            continue
        expected = "groundwork_celery" if job.name == "tenant_ingest_distributed" else "in_process"
        assert job.executor_def.name == expected, job.name


def _extraction_children() -> list:
    import psutil

    return [
        child
        for child in psutil.Process().children(recursive=True)
        if "resources.engines.extraction_worker" in " ".join(child.cmdline())
    ]


def test_the_extraction_workers_start_only_for_work_and_end_with_the_run(
    platform: Platform, index_prefix: str
) -> None:
    """Dagster's resource lifecycle closes the children when the run ends; they
    start when the first document needs one, as many as there are documents
    (up to one per core), so a rescan with nothing to extract starts none
    ("Operable: quiet when idle": every run used to start one per core)."""
    from pipelines.definitions import ALL_ASSETS

    tenant = f"x-{uuid.uuid4().hex[:8]}"
    write_inbox(platform.settings.inbox_dir, tenant, {"a.md": "# A\n\ntext\n"})
    seen: dict[str, list[int]] = {"registration": [], "extraction": []}

    @dg.asset(partitions_def=ALL_ASSETS[0].partitions_def, deps=[ALL_ASSETS[0]])
    def after_registration() -> None:
        seen["registration"].append(len(_extraction_children()))

    @dg.asset(partitions_def=ALL_ASSETS[0].partitions_def, deps=["extracted_documents"])
    def after_extraction() -> None:
        seen["extraction"].append(len(_extraction_children()))

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("tenant", [tenant])
        for _ in range(2):  # one file to extract, then a rescan with nothing to do
            result = dg.materialize(
                [*ALL_ASSETS, after_registration, after_extraction],
                selection=[
                    "source_registrations",
                    "after_registration",
                    "extracted_documents",
                    "after_extraction",
                ],
                partition_key=tenant,
                instance=instance,
                resources={"groundwork": resource(index_prefix)},
            )
            assert result.success
            assert _extraction_children() == []  # gone with the run
    assert seen == {"registration": [0, 0], "extraction": [1, 0]}


def test_an_idle_inbox_tick_reads_no_runs(
    platform: Platform, index_prefix: str, monkeypatch
) -> None:
    """#14: the sensors fetched every active run on every tick; a tick that has
    nothing to request now asks Dagster's run storage nothing."""
    tenant = f"s-{uuid.uuid4().hex[:8]}"
    write_inbox(platform.settings.inbox_dir, tenant, {"a.md": "# A\n\ntext\n"})
    with dg.instance_for_test() as instance:
        first = inbox_sensor(
            dg.build_sensor_context(
                instance=instance, resources={"groundwork": resource(index_prefix)}
            )
        )
        reads: list[str] = []
        for name in ("get_runs", "get_run_ids", "get_run_records"):
            original = getattr(instance, name)

            def counted(*args, _name=name, _original=original, **kwargs):  # type: ignore[no-untyped-def]
                reads.append(_name)
                return _original(*args, **kwargs)

            monkeypatch.setattr(instance, name, counted)
        inbox_sensor(
            dg.build_sensor_context(
                instance=instance,
                cursor=first.cursor,
                resources={"groundwork": resource(index_prefix)},
            )
        )
        assert reads == []


def test_pending_work_sensor_skips_a_tenant_whose_run_is_in_progress(
    platform: Platform, index_prefix: str
) -> None:
    """A second run would only repeat the first one's work; the runs in progress
    are read once per tick (not once per tenant with work)."""
    from dagster._core.test_utils import create_run_for_test

    busy, idle = _tenant_with_an_upload(platform), _tenant_with_an_upload(platform)
    with dg.instance_for_test() as instance:
        create_run_for_test(
            instance,
            job_name="tenant_ingest",
            status=dg.DagsterRunStatus.STARTED,
            tags={"dagster/partition": busy},
        )
        context = dg.build_sensor_context(
            instance=instance, resources={"groundwork": resource(index_prefix)}
        )
        result = pending_work_sensor(context)
        requested = {r.partition_key for r in result.run_requests or []}
        assert idle in requested and busy not in requested


def test_pending_work_goes_to_the_distributed_job_only_for_a_tenant_above_one_shard(
    platform: Platform, index_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where worker hosts are configured (a broker), a tenant whose waiting
    versions make more than one shard is spread out (tenant_ingest_distributed);
    a small one keeps tenant_ingest's one process, with no per-step dispatch
    (groundwork/services/ingest_routing.py). Without a broker every tenant
    takes tenant_ingest, as before."""
    from assets.embeddings import SHARD_VERSIONS_ENV
    from resources.dagster_glue.celery_steps import BROKER_ENV

    small = _tenant_with_an_upload(platform)
    large = _tenant_with_an_upload(platform)
    for name in ("y.md", "z.md"):
        register_markdown(platform, large, name, f"# {name}\n\nmore\n")
    monkeypatch.setenv(SHARD_VERSIONS_ENV, "2")

    def jobs() -> dict[str, str]:
        with dg.instance_for_test() as instance:
            context = dg.build_sensor_context(
                instance=instance, resources={"groundwork": resource(index_prefix)}
            )
            result = pending_work_sensor(context)
        return {
            str(r.partition_key): str(r.job_name)
            for r in result.run_requests or []
            if r.partition_key in (small, large)
        }

    monkeypatch.delenv(BROKER_ENV, raising=False)
    assert jobs() == {small: "tenant_ingest", large: "tenant_ingest"}
    monkeypatch.setenv(BROKER_ENV, "redis://:secret@127.0.0.1:6399/0")
    assert jobs() == {small: "tenant_ingest", large: "tenant_ingest_distributed"}
