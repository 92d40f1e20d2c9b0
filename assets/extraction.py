"""extracted_documents: stored versions into block lists (or failure values)."""

import warnings

import dagster as dg

from assets.partitions import tenant_partitions
from assets.policies import INFRA_RETRY
from assets.registration import source_registrations
from groundwork.catalog import VersionShard
from groundwork.stages.extraction import extract_pending
from groundwork.stages.report import StageReport
from resources.composition.platform import Platform
from resources.dagster_glue.platform_resource import ExtractionWorkerResource, GroundworkResource

#: the extraction children's resource, one definition for every asset that
#: extracts (this one, and index_shards in a distributed run): Dagster requires
#: one resource per key across a code location
EXTRACTION_WORKERS = ExtractionWorkerResource().get_resource_definition()

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
        resource_defs={"extraction": EXTRACTION_WORKERS},
        description="Extracts every stored version that needs it. A document's own problem is "
        "recorded on its version as a failure reason and never fails the run.",
    )


def extract_versions(
    log: dg.DagsterLogManager,
    platform: Platform,
    tenant_id: str,
    extraction: ExtractionWorkerResource,
    shard: VersionShard | None = None,
) -> StageReport:
    """Extract what waits (only `shard`'s slice when given) and log each
    document's failure: the step this asset and a distributed run's shards run."""
    report = extract_pending(
        platform.catalog, platform.blobs, tenant_id, extractors=extraction.extractors(), shard=shard
    )
    for filename, reason in sorted(report.failures.items()):
        log.warning(f"{filename}: extraction failed ({reason})")
    return report


def _extract(
    context: dg.AssetExecutionContext,
    groundwork: GroundworkResource,
    extraction: ExtractionWorkerResource,
) -> dg.MaterializeResult:
    report = extract_versions(context.log, groundwork.platform(), context.partition_key, extraction)
    metadata: dict[str, object] = dict(report.as_metadata())
    if report.failures:
        metadata["failures"] = dg.MetadataValue.json(report.failures)
        for reason in sorted(set(report.failures.values())):
            metadata[f"failed_{reason}"] = sum(1 for r in report.failures.values() if r == reason)
    return dg.MaterializeResult(metadata=metadata)  # type: ignore[arg-type]


extracted_documents = _asset(_extract)

#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[extracted_documents])
