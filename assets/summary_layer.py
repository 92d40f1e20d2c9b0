"""summary_layer: each chunked version's compiled summary page, a layer of its
own in the same chunk table and indexes; and the drift check that marks a
summary for recompilation when its version's raw chunks changed since."""

import os
import warnings

import dagster as dg

from assets.chunks import chunks
from assets.partitions import tenant_partitions
from assets.policies import INFRA_RETRY
from groundwork.stages.summary_layer import (
    DEFAULT_DRIFT_THRESHOLD,
    check_summary_drift,
    summarize_pending,
)
from resources.dagster_glue.platform_resource import GroundworkResource

SUMMARY_DRIFT = "summary_drift"


@dg.asset(
    partitions_def=tenant_partitions,
    deps=[chunks],
    group_name="summary_layer",
    kinds={"python", "postgres"},
    retry_policy=INFRA_RETRY,
    description="Compiles each chunked version's summary page (extractive: title and lead "
    "sentences; generative, labelled with its model, only when GROUNDWORK_LLM_URL is set) "
    "and writes it as chunks of the summary layer of the same version, so the indexes take "
    "both layers of a version together and one pointer flip publishes both.",
)
def summary_layer(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    tenant_id = context.partition_key
    embedder = platform.embedder(platform.serving_model(tenant_id))
    summarizer = platform.summarizer()
    report = summarize_pending(
        platform.catalog,
        tenant_id,
        embedder.count_tokens,
        summarizer,
        max_tokens=min(256, embedder.model.max_tokens),
    )
    metadata = {
        **report.as_metadata(),
        "summarizer": "extractive" if summarizer is None else summarizer.kind,
        "generative_fell_back": report.skipped,
    }
    return dg.MaterializeResult(metadata=metadata)


with warnings.catch_warnings():
    # A partitioned asset check is a preview in Dagster 1.13, and the way to run
    # a check per tenant partition (the check reads and marks that tenant only).
    warnings.simplefilter("ignore", category=dg.PreviewWarning)

    @dg.asset_check(
        asset=summary_layer,
        name=SUMMARY_DRIFT,
        partitions_def=tenant_partitions,
        # after serving_index when both are ready: the check is not on the
        # way to searchable, and running first it delayed every ingest's search
        op_tags={"dagster/priority": "-1"},
        description="The drift rate: the share of the tenant's compiled summaries whose "
        "version's raw chunks changed since compilation. Over the threshold "
        f"(GROUNDWORK_SUMMARY_DRIFT_THRESHOLD, default {DEFAULT_DRIFT_THRESHOLD:.0%}) the check "
        "fails (error) and marks the drifted summaries for recompilation, which the next "
        "summary_layer materialization does; within it, they are reported and served as they are.",
    )
    def summary_drift_check(
        context: dg.AssetCheckExecutionContext, groundwork: GroundworkResource
    ) -> dg.AssetCheckResult:
        platform = groundwork.platform()
        tenant_id = context.partition_key
        if platform.catalog.get_tenant(tenant_id) is None:
            # nothing was checked: never reported as a pass
            return dg.AssetCheckResult(
                passed=False,
                severity=dg.AssetCheckSeverity.WARN,
                metadata={"skipped": f"no tenant {tenant_id}"},
            )
        threshold = float(
            os.environ.get("GROUNDWORK_SUMMARY_DRIFT_THRESHOLD", DEFAULT_DRIFT_THRESHOLD)
        )
        found = check_summary_drift(platform.catalog, tenant_id, threshold)
        return dg.AssetCheckResult(
            passed=found.within_threshold,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "drift_rate": dg.MetadataValue.float(found.rate),
                "threshold": dg.MetadataValue.float(threshold),
                "compiled": found.compiled,
                "drifted": len(found.drifted),
                "marked": found.marked,
                "marked_for_recompilation": dg.MetadataValue.json(
                    [
                        {"version_id": d.version_id, "source_id": d.source_id}
                        for d in found.drifted[:20]
                    ]
                    if found.marked
                    else []
                ),
            },
        )


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[summary_layer], asset_checks=[summary_drift_check])
