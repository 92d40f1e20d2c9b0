"""connectors: each connector instance is a partition of `connector_sources`
(partition key: its instance id) and each pass a run of that partition
(`connector_pass`, requested by the connector sensors in
pipelines/connector_sensors.py, or launched or backfilled from the UI). The
run reports the connector's state as the partition's metadata and the
freshness check."""

from collections.abc import Iterator

import dagster as dg

from assets.policies import INFRA_RETRY
from groundwork.services.connector_sync import sync_instance
from groundwork.services.connectors import ConnectorView, connector, connector_by_id
from resources.connectors.factory import build_connector
from resources.connectors.ports import ConnectorPlatform
from resources.dagster_glue.platform_resource import GroundworkResource

connector_partitions = dg.DynamicPartitionsDefinition(name="connector")
WITHIN_FRESHNESS = "within_freshness_target"
ASSET_KEY = dg.AssetKey("connector_sources")
#: the metadata entry counting the items a pass registered (new or changed
#: bytes): what the ingest that follows a pass run waits for
REGISTERED = "registered"


def state_metadata(view: ConnectorView) -> dict[str, dg.MetadataValue]:
    state = view.to_dict()
    plain = (
        "tenant",
        "name",
        "kind",
        "last_pass",
        "seen",
        "changed",
        "deleted",
        "failed",
        "rescoped",
        "items",
        "paused",
    )
    shown = {k: state[k] for k in plain if k in state} | {"tenant": view.instance.tenant_id}
    metadata: dict[str, dg.MetadataValue] = {
        k: dg.MetadataValue.text(str(v)) if isinstance(v, str) else dg.MetadataValue.int(int(v))
        for k, v in shown.items()
    }
    metadata["lag_seconds"] = dg.MetadataValue.float(float(state["lag_seconds"] or -1.0))
    metadata["last_error"] = dg.MetadataValue.text(str(state["last_error"] or ""))
    metadata["last_finished"] = dg.MetadataValue.text(str(state["last_finished"] or ""))
    metadata["item_errors"] = dg.MetadataValue.json(state["item_errors"])
    metadata["notes"] = dg.MetadataValue.json(state["notes"])
    return metadata


def freshness_check(view: ConnectorView) -> dg.AssetCheckResult:
    """Green only when the last finished pass began within the target. A
    paused connector is judged the same way (pausing does not make stale
    documents fresh): paused and behind fails at WARN with `paused: true`, so
    the UI shows why it is behind; paused within its target passes."""
    return dg.AssetCheckResult(
        check_name=WITHIN_FRESHNESS,
        asset_key=ASSET_KEY,
        passed=not view.behind,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "lag_seconds": float(view.state.lag_seconds or -1.0) if view.state else -1.0,
            "freshness_seconds": view.instance.freshness_seconds,
            "partition": view.instance.instance_id,
            "paused": view.instance.paused,
        },
    )


@dg.asset(
    name="connector_sources",
    partitions_def=connector_partitions,
    group_name="connectors",
    kinds={"postgres", "s3"},
    retry_policy=INFRA_RETRY,
    check_specs=[
        dg.AssetCheckSpec(
            WITHIN_FRESHNESS,
            asset=ASSET_KEY,
            description="The connector's last finished pass began within its freshness target. "
            "A paused connector is not exempt: paused and behind fails (WARN) with "
            "paused: true in its metadata.",
        )
    ],
    description="One sync pass of a connector instance (partition: its instance id): new and "
    "changed items registered, deletions and permission changes at the source applied; its "
    "state (last pass, seen/changed/deleted/failed, lag, last error) as metadata. A pass that "
    "stops on an error fails the run, its state observed and its check reported first; a "
    "paused instance is not passed.",
)
def connector_sources(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> Iterator[dg.MaterializeResult | dg.AssetObservation | dg.AssetCheckResult]:
    platform = groundwork.platform()
    instance = connector_by_id(ConnectorPlatform(platform), context.partition_key)
    ports = ConnectorPlatform(platform.for_tenant(instance.tenant_id))
    if instance.paused:
        context.log.info(f"{instance.name} is paused: no pass")
        view = connector(ports, instance.tenant_id, instance.instance_id)
        yield dg.MaterializeResult(
            metadata={**state_metadata(view), REGISTERED: dg.MetadataValue.int(0)},
            check_results=[freshness_check(view)],
        )
        return
    report = sync_instance(ports.platform, ports.connector_catalog(), instance, build_connector)
    context.log.info(f"pass {report.pass_no}: {report}")
    view = connector(ports, instance.tenant_id, instance.instance_id)
    check = freshness_check(view)
    if not report.finished:
        # the state and the check are shown before the run fails: the UI tells why
        yield dg.AssetObservation(
            ASSET_KEY, partition=instance.instance_id, metadata=state_metadata(view)
        )
        yield check
        raise dg.Failure(
            description=f"{instance.name}: pass {report.pass_no} stopped: "
            f"{report.errors[-1] if report.errors else 'unknown error'}",
            allow_retries=False,  # the pass retried its source already; the next tick resumes it
        )
    yield dg.MaterializeResult(
        metadata={**state_metadata(view), REGISTERED: dg.MetadataValue.int(report.changed)},
        check_results=[check],
    )


defs = dg.Definitions(assets=[connector_sources])
