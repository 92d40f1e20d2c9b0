"""The connectors in Dagster (issue #34, "Dagster as the control plane"): the
sensor of a kind only selects due, unpaused instances and requests a
`connector_pass` run per instance (its `connector` partition); the run does
the pass and reports the connector's state as metadata of the partition with
the freshness check; the ingest run of the tenant follows a run that
registered something (connector_ingest_sensor); one broken connector's run
fails and no other's; a paused connector's check is never green."""

from __future__ import annotations

import json
import time
from pathlib import Path

import dagster as dg
import pytest
from fastapi.testclient import TestClient

from assets.connectors import WITHIN_FRESHNESS
from groundwork.services.connectors import (
    ConnectorRequest,
    ConnectorView,
    add_connector,
    list_connectors,
    pause_connector,
)
from pipelines.connector_sensors import (
    CONNECTOR_PASS_JOB,
    connector_ingest_sensor,
    connector_sensor,
)
from pipelines.definitions import build_definitions
from resources.composition.platform import Platform
from resources.connectors.ports import ConnectorPlatform
from retrieval_api.app import create_app
from tests.e2e.helpers import resource


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "guide.md").write_text("# Guide\n\nThe VPN gateway is vpn.example.org.\n")
    return tmp_path


def _tick(instance: dg.DagsterInstance, index_prefix: str) -> dg.SensorResult | dg.SkipReason:
    sensor = connector_sensor("fsspec")
    with dg.build_sensor_context(
        instance=instance, resources={"groundwork": resource(index_prefix)}
    ) as context:
        result = sensor(context)
    assert isinstance(result, dg.SensorResult | dg.SkipReason), result
    return result


def _add(platform: Platform, tenant_id: str, name: str, config: dict, **more) -> ConnectorView:  # type: ignore[no-untyped-def,type-arg]
    ports = ConnectorPlatform(platform.for_tenant(tenant_id))
    return add_connector(ports, tenant_id, ConnectorRequest("fsspec", name, config, **more))


def _views(platform: Platform, tenant_id: str) -> dict[str, ConnectorView]:
    ports = ConnectorPlatform(platform.for_tenant(tenant_id))
    return {v.instance.name: v for v in list_connectors(ports, tenant_id)}


def _pass_run(
    instance: dg.DagsterInstance, index_prefix: str, instance_id: str
) -> dg.ExecuteInProcessResult:
    if not instance.has_dynamic_partition("connector", instance_id):
        instance.add_dynamic_partitions("connector", [instance_id])
    job = build_definitions(resource(index_prefix)).resolve_job_def(CONNECTOR_PASS_JOB)
    return job.execute_in_process(
        partition_key=instance_id, instance=instance, raise_on_error=False
    )


def test_a_tick_requests_a_pass_run_per_due_instance_and_passes_nothing(
    platform: Platform, tenant_id: str, folder: Path, index_prefix: str
) -> None:
    wiki = _add(platform, tenant_id, "wiki", {"root": str(folder)}, interval_seconds=1)
    notes = _add(platform, tenant_id, "notes", {"root": str(folder)}, interval_seconds=1)
    ports = ConnectorPlatform(platform.for_tenant(tenant_id))
    pause_connector(ports, tenant_id, "notes")
    instance = dg.DagsterInstance.ephemeral()

    result = _tick(instance, index_prefix)
    assert isinstance(result, dg.SensorResult)
    ours = [r for r in result.run_requests or [] if r.tags.get("groundwork/tenant") == tenant_id]
    assert [r.partition_key for r in ours] == [wiki.instance.instance_id], "paused: no run"
    assert ours[0].job_name in (None, CONNECTOR_PASS_JOB) and ours[0].run_key
    added = {
        p.partitions_def_name: set(p.partition_keys)
        for p in result.dynamic_partitions_requests or []
    }
    assert wiki.instance.instance_id in added["connector"]
    assert tenant_id in added["tenant"], "the ingest that follows needs the tenant's partition"
    # paused and never passed: behind, reported not green (no run passes it)
    [stale] = [
        e
        for e in result.asset_events
        if isinstance(e, dg.AssetCheckEvaluation) and e.partition == notes.instance.instance_id
    ]
    assert not stale.passed and stale.metadata["paused"].value is True
    views = _views(platform, tenant_id)
    assert views["wiki"].to_dict()["last_pass"] == 0, "the tick passed nothing itself"
    assert not [e for e in result.asset_events if isinstance(e, dg.AssetMaterialization)]


def test_the_pass_run_registers_and_the_ingest_that_follows_makes_it_searchable(
    platform: Platform, tenant_id: str, folder: Path, index_prefix: str
) -> None:
    wiki = _add(platform, tenant_id, "wiki", {"root": str(folder)})
    instance = dg.DagsterInstance.ephemeral()
    run = _pass_run(instance, index_prefix, wiki.instance.instance_id)
    assert run.success
    [check] = run.get_asset_check_evaluations()
    assert check.check_name == WITHIN_FRESHNESS and check.passed
    [event] = run.get_asset_materialization_events()
    metadata = event.materialization.metadata
    assert metadata["changed"].value == 1 and metadata["items"].value == 1
    assert metadata["registered"].value == 1
    assert json.dumps(metadata["item_errors"].value) == "[]"

    # the run that registered something is followed by the tenant's ingest run
    requests = _after_pass(instance, run)
    assert [(r.job_name, r.partition_key) for r in requests] == [("tenant_ingest", tenant_id)]
    if not instance.has_dynamic_partition("tenant", tenant_id):
        instance.add_dynamic_partitions("tenant", [tenant_id])
    ingest = build_definitions(resource(index_prefix)).resolve_job_def("tenant_ingest")
    assert ingest.execute_in_process(partition_key=tenant_id, instance=instance).success
    _, key = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "staff")
    api = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    answer = api.post(
        "/v1/search",
        json={"query": "what is the VPN gateway"},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert answer.status_code == 200, answer.text
    assert "vpn.example.org" in json.dumps(answer.json()["hits"])

    # an unchanged pass is a run that registered nothing: no ingest follows
    again = _pass_run(instance, index_prefix, wiki.instance.instance_id)
    assert again.success
    assert _after_pass(instance, again) == []


def _after_pass(
    instance: dg.DagsterInstance, run: dg.ExecuteInProcessResult
) -> list[dg.RunRequest]:
    dagster_run = instance.get_run_by_id(run.run_id)
    assert dagster_run is not None
    [success] = [e for e in run.all_events if e.event_type == dg.DagsterEventType.RUN_SUCCESS]
    context = dg.build_run_status_sensor_context(
        sensor_name=connector_ingest_sensor.name,
        dagster_event=success,
        dagster_instance=instance,
        dagster_run=dagster_run,
    )
    out = connector_ingest_sensor(context)
    return [out] if isinstance(out, dg.RunRequest) else []


def test_a_failing_connectors_run_fails_and_another_connectors_run_does_not(
    platform: Platform, tenant_id: str, folder: Path, index_prefix: str
) -> None:
    good = _add(platform, tenant_id, "wiki", {"root": str(folder)})
    broken = _add(
        platform,
        tenant_id,
        "broken",
        {"root": str(folder), "protocol": "sftp"},
        secret_refs={"password": "env:GW_TEST_NO_SUCH_VARIABLE"},
    )
    instance = dg.DagsterInstance.ephemeral()
    failed = _pass_run(instance, index_prefix, broken.instance.instance_id)
    assert not failed.success
    [check] = failed.get_asset_check_evaluations()
    assert not check.passed, "its state is shown: behind, with its error"
    [observed] = [
        e.asset_observation_data.asset_observation  # type: ignore[union-attr]
        for e in failed.all_events
        if e.event_type == dg.DagsterEventType.ASSET_OBSERVATION
    ]
    assert "GW_TEST_NO_SUCH_VARIABLE" in str(observed.metadata["last_error"].value)
    passed = _pass_run(instance, index_prefix, good.instance.instance_id)
    assert passed.success
    views = _views(platform, tenant_id)
    assert views["wiki"].to_dict()["changed"] == 1
    assert "GW_TEST_NO_SUCH_VARIABLE" in (views["broken"].to_dict()["last_error"] or "")

    # one instance per run: both due, two requests, each its own partition
    time.sleep(0.01)
    result = _tick(instance, index_prefix)
    assert isinstance(result, dg.SensorResult)
    due = {
        r.partition_key
        for r in result.run_requests or []
        if r.tags.get("groundwork/tenant") == tenant_id
    }
    assert broken.instance.instance_id in due, "its pass stopped open: due again"


def test_a_paused_connector_behind_its_target_is_not_green(
    platform: Platform, tenant_id: str, folder: Path, index_prefix: str
) -> None:
    wiki = _add(platform, tenant_id, "wiki", {"root": str(folder)})
    ports = ConnectorPlatform(platform.for_tenant(tenant_id))
    pause_connector(ports, tenant_id, "wiki")
    instance = dg.DagsterInstance.ephemeral()
    run = _pass_run(instance, index_prefix, wiki.instance.instance_id)
    assert run.success, "a run of a paused connector is not an error: it passes nothing"
    [check] = run.get_asset_check_evaluations()
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["paused"].value is True
    assert _views(platform, tenant_id)["wiki"].to_dict()["last_pass"] == 0


def test_a_connector_paused_and_falling_behind_turns_not_green_without_a_run(
    platform: Platform, tenant_id: str, folder: Path, index_prefix: str
) -> None:
    """No run passes a paused connector, so its last check (green) would stay:
    the sensor reports it not green once it falls behind, once."""
    wiki = _add(platform, tenant_id, "wiki", {"root": str(folder)}, freshness_seconds=3)
    instance = dg.DagsterInstance.ephemeral()
    [green] = _pass_run(
        instance, index_prefix, wiki.instance.instance_id
    ).get_asset_check_evaluations()
    assert green.passed
    pause_connector(ConnectorPlatform(platform.for_tenant(tenant_id)), tenant_id, "wiki")
    time.sleep(3.1)  # past its freshness target

    def ours(result: dg.SensorResult | dg.SkipReason) -> list[dg.AssetCheckEvaluation]:
        events = result.asset_events if isinstance(result, dg.SensorResult) else []
        return [
            e
            for e in events or []
            if isinstance(e, dg.AssetCheckEvaluation) and e.partition == wiki.instance.instance_id
        ]

    sensor = connector_sensor("fsspec")
    with dg.build_sensor_context(
        instance=instance, resources={"groundwork": resource(index_prefix)}
    ) as context:
        first = sensor(context)
        [check] = ours(first)
        assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
        assert check.metadata["paused"].value is True
        assert isinstance(first, dg.SensorResult) and first.cursor
        assert not [
            r for r in first.run_requests or [] if r.partition_key == wiki.instance.instance_id
        ], "paused: no run"
    with dg.build_sensor_context(
        instance=instance, resources={"groundwork": resource(index_prefix)}, cursor=first.cursor
    ) as context:
        assert ours(sensor(context)) == [], "reported once, not every tick"
