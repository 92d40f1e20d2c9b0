"""Partitions: a dynamic tenant dimension everywhere, and tenant x embedding
model for the model-dependent stages (embeddings, publication)."""

from __future__ import annotations

import warnings

import dagster as dg

from groundwork.embedding_models import KNOWN_MODELS

tenant_partitions = dg.DynamicPartitionsDefinition(name="tenant")
model_partitions = dg.StaticPartitionsDefinition(sorted(KNOWN_MODELS))
tenant_model_partitions = dg.MultiPartitionsDefinition(
    {"tenant": tenant_partitions, "embedding_model": model_partitions}
)
#: Maps a tenant x model partition to its tenant's partition of a tenant-only asset.
with warnings.catch_warnings():
    # Beta in Dagster 1.13, and the documented way to map tenant x model -> tenant.
    warnings.simplefilter("ignore", category=dg.BetaWarning)
    by_tenant = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="tenant")


def tenant_and_model(context: dg.AssetExecutionContext) -> tuple[str, str]:
    key = context.partition_key
    assert isinstance(key, dg.MultiPartitionKey)
    dims = key.keys_by_dimension
    return dims["tenant"], dims["embedding_model"]


def tenant_model_key(tenant_id: str, model_key: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"tenant": tenant_id, "embedding_model": model_key})
