"""embeddings: chunks into pgvector, one partition per tenant x embedding model."""

from typing import Any

import dagster as dg

from assets.partitions import by_tenant, tenant_and_model, tenant_model_partitions
from assets.policies import INFRA_RETRY
from assets.summary_layer import summary_layer
from groundwork.stages.embeddings import embed_pending
from resources.composition.platform import Platform
from resources.dagster_glue.platform_resource import GroundworkResource


@dg.asset(
    partitions_def=tenant_model_partitions,
    deps=[dg.AssetDep(summary_layer, partition_mapping=by_tenant)],
    group_name="embeddings",
    kinds={"postgres", "pgvector", "onnx"},
    pool="embedding",
    retry_policy=INFRA_RETRY,
    description="Embeds chunked versions with the partition's model; unchanged chunks reuse "
    "their vectors (cached by content hash).",
)
def embeddings(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    tenant_id, model_key = tenant_and_model(context)
    return dg.MaterializeResult(
        metadata=embedding_metadata(groundwork.platform(), tenant_id, model_key)
    )


def embedding_metadata(platform: Platform, tenant_id: str, model_key: str) -> dict[str, Any]:
    """Embed what waits for (tenant, model); the step both embedding assets run."""
    report = embed_pending(
        platform.catalog, platform.vector_index(model_key), platform.embedder(model_key), tenant_id
    )
    metadata: dict[str, Any] = dict(report.as_metadata())
    if report.seconds > 0 and report.items:
        metadata["chunks_per_second"] = round((report.items - report.reused) / report.seconds, 1)
    return {**metadata, "dimension": platform.model(model_key).dimension}


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[embeddings])
