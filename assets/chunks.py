"""chunks: block lists into structure-aware chunks with stable ids."""

import dagster as dg

from assets.extraction import extracted_documents
from assets.partitions import tenant_partitions
from assets.policies import INFRA_RETRY
from groundwork.chunking import ChunkingPolicy
from groundwork.stages.chunks import chunk_pending
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
    embedder = platform.embedder(platform.serving_model(tenant_id))
    policy = ChunkingPolicy(max_tokens=min(256, embedder.model.max_tokens))
    report = chunk_pending(platform.catalog, tenant_id, embedder.count_tokens, policy)
    counts = platform.catalog.counts(tenant_id)
    return dg.MaterializeResult(
        metadata={
            **report.as_metadata(),
            "chunks_total": counts.chunks,
            "token_model": embedder.model.key,
        }
    )


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[chunks])
