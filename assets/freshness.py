"""backlog_freshness: a tenant whose pipeline backlog is older than its freshness
target fails a check on its serving index, in the Dagster UI.

The check runs with every tenant_ingest run of the tenant (the hourly rescan
makes one for each tenant with a backlog), so a tenant whose files wait,
because a stage keeps failing or the runs are starved, turns red within the
hour; one whose runs keep up stays green (and has no backlog, so no hourly
run). The rule is groundwork.services.backlog's.
"""

import warnings

import dagster as dg

from assets.partitions import tenant_partitions
from assets.publication import serving_index
from groundwork.services.backlog import is_stale, tenant_backlog
from resources.dagster_glue.platform_resource import GroundworkResource

BACKLOG_FRESHNESS = "backlog_freshness"

with warnings.catch_warnings():
    # a partitioned asset check is a preview in Dagster 1.13 (see summary_layer)
    warnings.simplefilter("ignore", category=dg.PreviewWarning)

    @dg.asset_check(
        asset=serving_index,
        name=BACKLOG_FRESHNESS,
        partitions_def=tenant_partitions,
        description="Fails (error) while the tenant's oldest version waiting for any stage has "
        "waited longer than the freshness target (GROUNDWORK_FRESHNESS_TARGET_SECONDS, 15 min "
        "by default); metadata: the versions waiting per stage and the oldest one's age.",
    )
    def backlog_freshness(
        context: dg.AssetCheckExecutionContext, groundwork: GroundworkResource
    ) -> dg.AssetCheckResult:
        platform = groundwork.platform()
        target = platform.settings.freshness_target_seconds
        backlog = tenant_backlog(platform.catalog, context.partition_key)
        return dg.AssetCheckResult(
            passed=not is_stale(backlog, target),
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "target_seconds": target,
                "oldest_waiting_seconds": round(backlog.oldest_seconds, 1) if backlog else 0.0,
                "waiting": dg.MetadataValue.json(backlog.stages if backlog else {}),
            },
        )


#: what this module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(asset_checks=[backlog_freshness])
