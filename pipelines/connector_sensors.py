"""A sensor per connector kind: each tick runs a pass of every due, unpaused
instance of its kind (groundwork.services.connector_sync), reports each
instance's state as metadata of its `connector_sources` partition with the
freshness check, and requests the tenant's ingest run only when a pass
registered something new or changed (deletions and permission changes are
applied by the pass itself). One instance's failure is logged and recorded in
its state; the others go on.

A pass runs inside the tick, so it must fit the sensor's evaluation timeout:
the pass over 100,000 unchanged objects takes seconds (bench/connectors.py).
"""

from __future__ import annotations

import dagster as dg

from assets.connectors import ASSET_KEY, freshness_check, state_metadata
from groundwork.services.connector_sync import sync_instance
from groundwork.services.connectors import KINDS, connector
from pipelines.jobs import tenant_ingest_job
from pipelines.sensors import on_running_platform
from resources.composition.platform import Platform
from resources.connectors.factory import build_connector
from resources.connectors.ports import ConnectorPlatform


def connector_sensor(kind: str) -> dg.SensorDefinition:
    @dg.sensor(
        name=f"{kind}_connector_sensor",
        job=tenant_ingest_job,
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Runs the due passes of the tenants' {kind} connectors; requests an ingest "
        "run for a tenant whose pass registered new or changed items.",
    )
    @on_running_platform
    def tick(context: dg.SensorEvaluationContext, platform: Platform) -> dg.SensorResult:
        known_tenants = set(context.instance.get_dynamic_partitions("tenant"))
        known_connectors = set(context.instance.get_dynamic_partitions("connector"))
        requests: dict[str, dg.RunRequest] = {}
        events: list[dg.AssetMaterialization | dg.AssetCheckEvaluation] = []
        new_connectors: list[str] = []
        for instance in ConnectorPlatform(platform).connector_catalog().due_instances(kind):
            ports = ConnectorPlatform(platform.for_tenant(instance.tenant_id))
            try:
                report = sync_instance(
                    ports.platform, ports.connector_catalog(), instance, build_connector
                )
                view = connector(ports, instance.tenant_id, instance.instance_id)
            except Exception as exc:  # one connector's failure is its own
                context.log.error(f"connector {instance.instance_id}: {exc}")
                continue
            if instance.instance_id not in known_connectors:
                new_connectors.append(instance.instance_id)
            check = freshness_check(view)
            events.append(
                dg.AssetMaterialization(
                    ASSET_KEY, partition=instance.instance_id, metadata=state_metadata(view)
                )
            )
            events.append(
                dg.AssetCheckEvaluation(
                    asset_key=ASSET_KEY,
                    check_name=check.check_name or "",
                    passed=check.passed,
                    metadata=check.metadata,
                    severity=check.severity,
                )
            )
            if report.changed and instance.tenant_id not in requests:
                requests[instance.tenant_id] = dg.RunRequest(
                    run_key=f"connector:{instance.instance_id}:{report.pass_no}",
                    partition_key=instance.tenant_id,
                    tags={"groundwork/connector": instance.instance_id},
                )
        partitions = [
            dg.AddDynamicPartitionsRequest("tenant", sorted(set(requests) - known_tenants)),
            dg.AddDynamicPartitionsRequest("connector", new_connectors),
        ]
        return dg.SensorResult(
            run_requests=list(requests.values()),
            dynamic_partitions_requests=[p for p in partitions if p.partition_keys],
            asset_events=events,
        )

    return tick


connector_sensors = [connector_sensor(kind) for kind in KINDS]

defs = dg.Definitions(sensors=connector_sensors)
