"""keyword_index: chunks into the keyword engine (OpenSearch BM25 by default)."""

import dagster as dg

from assets.embeddings import index_shards
from assets.partitions import tenant_partitions
from assets.policies import INFRA_RETRY
from assets.summary_layer import summary_layer
from groundwork.stages.keyword_index import keyword_index_pending
from resources.dagster_glue.platform_resource import GroundworkResource


@dg.asset(
    partitions_def=tenant_partitions,
    # after the shards when a distributed run selects them (they leave nothing to do)
    deps=[summary_layer, index_shards],
    group_name="keyword_index",
    kinds={"opensearch"},
    retry_policy=INFRA_RETRY,
    description="Writes summarized versions (both layers) to the keyword index, not yet live; "
    "publication flips them.",
)
def keyword_index(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    report = keyword_index_pending(platform.catalog, platform.keywords, context.partition_key)
    return dg.MaterializeResult(metadata=report.as_metadata())


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[keyword_index])
