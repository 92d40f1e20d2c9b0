"""summary_layer: each chunked version's compiled summary page, a layer of its
own in the same chunk table and indexes; the tenant's compiled overview page
(overview_page, after publication); and the drift checks that mark a summary or
an overview page for recompilation when what it was compiled from changed."""

import os
import warnings
from collections.abc import Callable
from typing import Any

import dagster as dg

from assets.chunks import chunks
from assets.partitions import tenant_partitions
from assets.policies import INFRA_RETRY
from groundwork.catalog import VersionShard
from groundwork.stages.report import StageReport
from groundwork.stages.summary_layer import (
    DEFAULT_DRIFT_THRESHOLD,
    DriftRate,
    OverviewDrift,
    check_overview_drift,
    check_summary_drift,
    compile_overview_page,
    summarize_pending,
)
from resources.composition.platform import Platform
from resources.dagster_glue.platform_resource import GroundworkResource

SUMMARY_DRIFT = "summary_drift"
OVERVIEW_DRIFT = "overview_drift"


def drift_threshold() -> float:
    """GROUNDWORK_SUMMARY_DRIFT_THRESHOLD, read when a check runs (never at import)."""
    return float(os.environ.get("GROUNDWORK_SUMMARY_DRIFT_THRESHOLD", DEFAULT_DRIFT_THRESHOLD))


Measured = tuple[DriftRate | OverviewDrift, dict[str, Any]]


def checked_drift(
    context: dg.AssetCheckExecutionContext,
    groundwork: GroundworkResource,
    measure: Callable[[Platform, str, float], Measured],
) -> dg.AssetCheckResult:
    """A drift check's result: the rate `measure` found for the partition's
    tenant against the configured threshold (error severity over it)."""
    platform = groundwork.platform()
    tenant_id = context.partition_key
    if platform.catalog.get_tenant(tenant_id) is None:
        # nothing was checked: never reported as a pass
        return dg.AssetCheckResult(
            passed=False,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"skipped": f"no tenant {tenant_id}"},
        )
    threshold = drift_threshold()
    found, metadata = measure(platform, tenant_id, threshold)
    return dg.AssetCheckResult(
        passed=found.within_threshold,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "drift_rate": dg.MetadataValue.float(found.rate),
            "threshold": dg.MetadataValue.float(threshold),
            "compiled": found.compiled,
            "marked": found.marked,
            **metadata,
        },
    )


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
    summarizer, report = summarize_versions(groundwork.platform(), context.partition_key)
    metadata = {
        **report.as_metadata(),
        "summarizer": summarizer,
        "generative_fell_back": report.skipped,
    }
    return dg.MaterializeResult(metadata=metadata)


def summarize_versions(
    platform: Platform, tenant_id: str, shard: VersionShard | None = None
) -> tuple[str, StageReport]:
    """Compile the summary pages that wait (only `shard`'s slice when given),
    sized in the serving model's tokens, and say which summarizer compiled
    them: the step this asset and a distributed run's shards run."""
    embedder = platform.embedder(platform.serving_model(tenant_id))
    summarizer = platform.summarizer()
    report = summarize_pending(
        platform.catalog,
        tenant_id,
        embedder.count_tokens,
        summarizer,
        max_tokens=min(256, embedder.model.max_tokens),
        shard=shard,
    )
    return ("extractive" if summarizer is None else summarizer.kind), report


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
        def measure(platform: Platform, tenant_id: str, threshold: float) -> Measured:
            found = check_summary_drift(platform.catalog, tenant_id, threshold)
            marked = [
                {"version_id": d.version_id, "source_id": d.source_id} for d in found.drifted[:20]
            ]
            return found, {
                "drifted": len(found.drifted),
                "marked_for_recompilation": dg.MetadataValue.json(marked if found.marked else []),
            }

        return checked_drift(context, groundwork, measure)


@dg.asset(
    partitions_def=tenant_partitions,
    # by key: assets.publication imports this module (serving_index follows summary_layer)
    deps=[dg.AssetKey("serving_index")],
    group_name="summary_layer",
    kinds={"python", "postgres"},
    retry_policy=INFRA_RETRY,
    description="Compiles the tenant's overview page, the ~500-token page (by the serving "
    "model's tokenizer) a model loads first: each published source's title, lead summary "
    "sentence and sections, each statement citing its source version. Recompiled only when "
    "its inputs (published versions and their summaries) changed or the drift check marked it.",
)
def overview_page(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    tenant_id = context.partition_key
    model_key = platform.serving_model(tenant_id)

    def count_tokens(text: str) -> int:
        # the tokenizer loads only when a page is compiled: an unchanged corpus
        # (a purge run that removed nothing listed) costs one read of the inputs
        return platform.embedder(model_key).count_tokens(text)

    report = compile_overview_page(platform.catalog, tenant_id, count_tokens, model_key)
    return dg.MaterializeResult(metadata={**report.as_metadata(), "tokenizer": model_key})


with warnings.catch_warnings():
    warnings.simplefilter("ignore", category=dg.PreviewWarning)

    @dg.asset_check(
        asset=overview_page,
        name=OVERVIEW_DRIFT,
        partitions_def=tenant_partitions,
        # blocking: whatever is built from the page waits for one that describes the
        # corpus, and a failure fails the run's check step (the page was written by then).
        # summary_drift cannot block: the indexes follow summary_layer, and a new
        # file's search must not wait for a drift check.
        blocking=True,
        description="The drift rate of the tenant's overview pages: the share whose sources "
        "(published versions, their summaries) changed since compilation. Over the threshold "
        f"(GROUNDWORK_SUMMARY_DRIFT_THRESHOLD, default {DEFAULT_DRIFT_THRESHOLD:.0%}) the check "
        "fails (error) and marks the page for recompilation by the next overview_page run.",
    )
    def overview_drift_check(
        context: dg.AssetCheckExecutionContext, groundwork: GroundworkResource
    ) -> dg.AssetCheckResult:
        def measure(platform: Platform, tenant_id: str, threshold: float) -> Measured:
            found = check_overview_drift(platform.catalog, tenant_id, threshold)
            return found, {"drifted": found.drifted}

        return checked_drift(context, groundwork, measure)


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(
    assets=[summary_layer, overview_page],
    asset_checks=[summary_drift_check, overview_drift_check],
)
