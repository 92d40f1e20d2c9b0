"""deletion_sweep: purges deleted sources from every store and proves it."""

import dagster as dg

from assets.partitions import tenant_partitions
from assets.policies import INFRA_RETRY
from groundwork.artifact_roles import purge_superseded
from groundwork.lifecycle import prove_tombstones, purge_deleted
from groundwork.model_cutover import retire_models
from groundwork.services.uploads import discard_expired
from resources.dagster_glue.platform_resource import GroundworkResource

NO_TOMBSTONED_CHUNKS = "no_tombstoned_chunks_remain"
#: how long a tenant can roll back to the model it switched away from
VECTOR_GRACE_SECONDS = 24 * 3600.0


@dg.asset(
    partitions_def=tenant_partitions,
    group_name="lifecycle",
    kinds={"postgres", "pgvector", "opensearch", "filesystem"},
    retry_policy=INFRA_RETRY,
    check_specs=[
        dg.AssetCheckSpec(
            NO_TOMBSTONED_CHUNKS,
            asset="deletion_sweep",
            description="No store (keyword index, any model's vectors) still holds a tombstoned chunk.",
        )
    ],
    description="Purges sources marked for deletion (already unsearchable) from the catalog, both "
    "indexes and the blob store, writing a tombstone per removed item per store.",
)
def deletion_sweep(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    tenant_id = context.partition_key
    indexes = platform.indexes()
    report = purge_deleted(platform.catalog, indexes, platform.blobs, tenant_id)
    # superseded artifact blobs still queued (a crash after a revision's commit, a
    # refused delete): retried here; what fails again stays queued
    superseded = purge_superseded(platform.artifacts, platform.blobs, tenant_id)
    retired = retire_models(
        platform.catalog, {v.model.key: v for v in indexes.vectors}, tenant_id, VECTOR_GRACE_SECONDS
    )
    proof = prove_tombstones(platform.catalog, indexes, tenant_id)
    # abandoned upload sessions' bytes (every tenant's: one listing of the staging)
    expired_uploads = discard_expired(platform.upload_staging())
    return dg.MaterializeResult(
        metadata={
            "sources_purged": report.sources,
            "chunks_purged": report.chunks,
            "blobs_deleted": report.blobs,
            # objects the store would not delete: their sources stay marked and
            # the next sweep retries them (groundwork.lifecycle.purge_deleted)
            "blob_delete_failures": [
                f"{f.source_id} {f.blob_key}: {f.reason}" for f in report.failures
            ],
            "superseded_blob_failures": list(superseded),
            "seconds": round(report.seconds, 3),
            "tombstoned_chunks": proof.tombstoned,
            "retired_model_vectors": sum(retired.values()),
            "expired_staged_uploads": expired_uploads,
        },
        check_results=[
            dg.AssetCheckResult(
                check_name=NO_TOMBSTONED_CHUNKS,
                passed=proof.clean,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={store: len(ids) for store, ids in proof.leftovers.items()},
            )
        ],
    )


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[deletion_sweep])
