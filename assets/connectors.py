"""connectors: each connector instance is a partition of `connector_sources`
(partition key: its instance id), so one connector's pass can be run, or
backfilled, from the UI; the connector sensors (pipelines/connector_sensors.py)
run the due passes themselves and report the same state as this asset's
metadata and check, so the UI shows every connector's last pass without a run
per pass."""

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
    return metadata


def freshness_check(view: ConnectorView) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        check_name=WITHIN_FRESHNESS,
        asset_key=ASSET_KEY,
        passed=not view.behind or view.instance.paused,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "lag_seconds": float(view.state.lag_seconds or -1.0) if view.state else -1.0,
            "freshness_seconds": view.instance.freshness_seconds,
            "partition": view.instance.instance_id,
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
            description="The connector's last finished pass began within its freshness target "
            "(a paused connector passes: pausing is the operator's decision).",
        )
    ],
    description="One sync pass of a connector instance (partition: its instance id): new and "
    "changed items registered, deletions and permission changes at the source applied; its "
    "state (last pass, seen/changed/deleted/failed, lag, last error) as metadata.",
)
def connector_sources(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    instance = connector_by_id(ConnectorPlatform(platform), context.partition_key)
    view_ports = ConnectorPlatform(platform.for_tenant(instance.tenant_id))
    report = sync_instance(
        view_ports.platform, view_ports.connector_catalog(), instance, build_connector
    )
    context.log.info(f"pass {report.pass_no}: {report}")
    view = connector(view_ports, instance.tenant_id, instance.instance_id)
    return dg.MaterializeResult(
        metadata=state_metadata(view), check_results=[freshness_check(view)]
    )


defs = dg.Definitions(assets=[connector_sources])
