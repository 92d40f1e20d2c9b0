"""chunks: block lists into structure-aware chunks with stable ids."""

import dagster as dg

from assets.extraction import extracted_documents
from assets.partitions import tenant_partitions
from assets.policies import INFRA_RETRY
from groundwork.catalog import VersionShard
from groundwork.chunking import ChunkingPolicy
from groundwork.stages.chunks import chunk_pending
from groundwork.stages.report import StageReport
from resources.composition.platform import Platform
from resources.dagster_glue.platform_resource import GroundworkResource


@dg.asset(
    partitions_def=tenant_partitions,
    deps=[extracted_documents],
    group_name="chunks",
    kinds={"python", "postgres"},
    retry_policy=INFRA_RETRY,
    description="Chunks extracted versions by structure (heading path prepended, tables whole), "
    "sized in the tenant's embedding model's tokens.",
)
def chunks(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    tenant_id = context.partition_key
    report = chunk_versions(platform, tenant_id)
    counts = platform.catalog.counts(tenant_id)
    return dg.MaterializeResult(
        metadata={
            **report.as_metadata(),
            "chunks_total": counts.chunks,
            "token_model": platform.serving_model(tenant_id),
        }
    )


def chunk_versions(
    platform: Platform, tenant_id: str, shard: VersionShard | None = None
) -> StageReport:
    """Chunk what waits (only `shard`'s slice when given) in the serving
    model's tokens: the step this asset and a distributed run's shards run."""
    embedder = platform.embedder(platform.serving_model(tenant_id))
    policy = ChunkingPolicy(max_tokens=min(256, embedder.model.max_tokens))
    return chunk_pending(platform.catalog, tenant_id, embedder.count_tokens, policy, shard=shard)


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[chunks])
