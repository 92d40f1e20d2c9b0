"""The connectors in Dagster: the sensor of a kind runs due passes, requests an
ingest run only when something changed, reports each connector's state as
metadata of its partition with the freshness check; one broken connector does
not stop another; one connector's pass runs as its partition (UI backfill)."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from assets.connectors import WITHIN_FRESHNESS, connector_sources
from groundwork.services.connectors import ConnectorRequest, add_connector, list_connectors
from pipelines.connector_sensors import connector_sensor
from resources.composition.platform import Platform
from resources.connectors.ports import ConnectorPlatform
from tests.e2e.helpers import resource


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "guide.md").write_text("# Guide\n\nThe VPN gateway is vpn.example.org.\n")
    return tmp_path


def _tick(instance: dg.DagsterInstance, index_prefix: str) -> dg.SensorResult:
    sensor = connector_sensor("fsspec")
    with dg.build_sensor_context(
        instance=instance, resources={"groundwork": resource(index_prefix)}
    ) as context:
        result = sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def test_the_sensor_runs_due_passes_and_requests_ingest_only_on_change(
    platform: Platform, tenant_id: str, folder: Path, index_prefix: str
) -> None:
    ports = ConnectorPlatform(platform.for_tenant(tenant_id))
    good = add_connector(
        ports,
        tenant_id,
        ConnectorRequest("fsspec", "wiki", {"root": str(folder)}, interval_seconds=1),
    )
    add_connector(
        ports,
        tenant_id,
        ConnectorRequest(
            "fsspec",
            "broken",
            {"root": str(folder), "protocol": "sftp"},
            {"password": "env:GW_TEST_NO_SUCH_VARIABLE"},
        ),
    )
    instance = dg.DagsterInstance.ephemeral()
    first = _tick(instance, index_prefix)
    assert [r.partition_key for r in first.run_requests or []] == [tenant_id]
    materialized = [e for e in first.asset_events if isinstance(e, dg.AssetMaterialization)]
    assert good.instance.instance_id in {m.partition for m in materialized}
    checks = [e for e in first.asset_events if isinstance(e, dg.AssetCheckEvaluation)]
    states = {v.instance.name: v for v in list_connectors(ports, tenant_id)}
    assert states["wiki"].state is not None and states["wiki"].state.counts.changed == 1
    broken = states["broken"].state
    assert broken is not None and "GW_TEST_NO_SUCH_VARIABLE" in (broken.counts.last_error or "")
    assert {c.passed for c in checks} == {True, False}, "the broken one is behind"

    import time

    time.sleep(1.2)  # the wiki's interval
    second = _tick(instance, index_prefix)
    assert not second.run_requests, "an unchanged source requests no ingest run"

    instance.add_dynamic_partitions("connector", [good.instance.instance_id])
    (folder / "faq.md").write_text("# FAQ\n\nPasswords rotate every 90 days.\n")
    run = dg.materialize(
        [connector_sources],
        partition_key=good.instance.instance_id,
        instance=instance,
        resources={"groundwork": resource(index_prefix)},
    )
    assert run.success
    [check] = run.get_asset_check_evaluations()
    assert check.check_name == WITHIN_FRESHNESS and check.passed
    [event] = run.get_asset_materialization_events()
    metadata = event.materialization.metadata
    assert metadata["changed"].value == 1 and metadata["items"].value == 2
    assert json.dumps(metadata["item_errors"].value) == "[]"
