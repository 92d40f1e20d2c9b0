"""embeddings: chunks into pgvector, one partition per tenant x embedding model."""

import dagster as dg

from assets.chunks import chunks
from assets.partitions import by_tenant, tenant_and_model, tenant_model_partitions
from assets.policies import INFRA_RETRY
from groundwork.pipeline import embed_pending
from resources.dagster_resources import GroundworkResource


@dg.asset(
    partitions_def=tenant_model_partitions,
    deps=[dg.AssetDep(chunks, partition_mapping=by_tenant)],
    group_name="index",
    kinds={"postgres", "pgvector", "onnx"},
    pool="embedding",
    retry_policy=INFRA_RETRY,
    description="Embeds chunked versions with the partition's model; unchanged chunks reuse "
    "their vectors (cached by content hash).",
)
def embeddings(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    tenant_id, model_key = tenant_and_model(context)
    report = embed_pending(
        platform.catalog, platform.vector_index(model_key), platform.embedder(model_key), tenant_id
    )
    metadata = report.as_metadata()
    if report.seconds > 0 and report.items:
        metadata["chunks_per_second"] = round((report.items - report.reused) / report.seconds, 1)
    return dg.MaterializeResult(
        metadata={**metadata, "dimension": platform.model(model_key).dimension}
    )
