"""extracted_documents: stored versions into block lists (or failure values)."""

import warnings

import dagster as dg

from assets.partitions import tenant_partitions
from assets.policies import INFRA_RETRY
from assets.registration import source_registrations
from groundwork.stages.extraction import extract_pending
from resources.dagster_glue.platform_resource import ExtractionWorkerResource, GroundworkResource

with warnings.catch_warnings():
    # `resource_defs` is beta in Dagster 1.13: the asset's own resource, so a
    # run without this step never starts an extraction child.
    warnings.simplefilter("ignore", category=dg.BetaWarning)
    _asset = dg.asset(
        name="extracted_documents",
        partitions_def=tenant_partitions,
        deps=[source_registrations],
        group_name="extraction",
        kinds={"python", "postgres"},
        pool="extraction",
        retry_policy=INFRA_RETRY,
        resource_defs={"extraction": ExtractionWorkerResource()},
        description="Extracts every stored version that needs it. A document's own problem is "
        "recorded on its version as a failure reason and never fails the run.",
    )


def _extract(
    context: dg.AssetExecutionContext,
    groundwork: GroundworkResource,
    extraction: ExtractionWorkerResource,
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    report = extract_pending(
        platform.catalog, platform.blobs, context.partition_key, extractors=extraction.extractors()
    )
    for filename, reason in sorted(report.failures.items()):
        context.log.warning(f"{filename}: extraction failed ({reason})")
    metadata: dict[str, object] = dict(report.as_metadata())
    if report.failures:
        metadata["failures"] = dg.MetadataValue.json(report.failures)
        for reason in sorted(set(report.failures.values())):
            metadata[f"failed_{reason}"] = sum(1 for r in report.failures.values() if r == reason)
    return dg.MaterializeResult(metadata=metadata)  # type: ignore[arg-type]


extracted_documents = _asset(_extract)

#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[extracted_documents])
