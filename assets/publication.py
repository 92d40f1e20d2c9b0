"""published_index: a version becomes searchable when both stores hold it.

The check in the same step proves that what is live in pgvector and in the
keyword index equals what the catalog says is published for the tenant.
"""

from typing import Any

import dagster as dg

from assets.embeddings import embedding_metadata, embeddings, index_shards
from assets.keyword_index import keyword_index
from assets.partitions import (
    by_tenant,
    tenant_and_model,
    tenant_model_key,
    tenant_model_partitions,
    tenant_partitions,
)
from assets.policies import INFRA_RETRY
from assets.summary_layer import summary_layer
from groundwork.stages.publication import publish_ready, store_agreement
from resources.composition.platform import Platform
from resources.dagster_glue.platform_resource import GroundworkResource
from resources.postgres.vector_index import PgVectorIndex

STORES_AGREE = "stores_agree"
FRESH = "fresh_enough"
#: the product's promise: a stored version is searchable within a minute
STALENESS_LIMIT_SECONDS = 60.0
#: upload -> searchable target on this machine (the product commits to 60 s)
FRESHNESS_TARGET_SECONDS = 10.0


def _check_specs(asset: str) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(
            STORES_AGREE,
            asset=asset,
            description="Postgres/pgvector and the keyword index hold exactly the published chunks.",
        ),
        dg.AssetCheckSpec(
            FRESH,
            asset=asset,
            description=f"No stored version has waited more than {STALENESS_LIMIT_SECONDS:.0f} s "
            "to become searchable for this model.",
        ),
    ]


def publish_and_check(
    platform: Platform, tenant_id: str, model_key: str
) -> tuple[dict[str, Any], list[dg.AssetCheckResult]]:
    """Publish what both stores hold for (tenant, model) and prove the stores
    agree and nothing waits too long; the one publication step both assets run."""
    vectors = platform.vector_index(model_key)
    others = [v for v in platform.indexes().vectors if v.model.key != model_key]
    graph_change = None
    if isinstance(vectors, PgVectorIndex):
        # Before publication: a tenant that crossed the line has its own graph by the
        # time its new rows go live (no graph spans tenants, so without it they would
        # be scanned exactly); one that shrank loses it. A cheap count when nothing
        # changes.
        graphs = vectors.refresh_tenant_graphs([tenant_id])
        graph_change = "built" if graphs.created else "dropped" if graphs.dropped else "unchanged"
    report = publish_ready(platform.catalog, vectors, platform.keywords, tenant_id, others)
    agreement = store_agreement(platform.catalog, vectors, platform.keywords, tenant_id)
    check = dg.AssetCheckResult(
        check_name=STORES_AGREE,
        passed=agreement.agrees,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "expected_live_chunks": agreement.expected,
            "missing_from_vectors": len(agreement.missing_from_vectors),
            "missing_from_keywords": len(agreement.missing_from_keywords),
            "unexpected_in_vectors": len(agreement.unexpected_in_vectors),
            "unexpected_in_keywords": len(agreement.unexpected_in_keywords),
            "sample": dg.MetadataValue.json(
                {
                    "missing_from_vectors": list(agreement.missing_from_vectors[:5]),
                    "missing_from_keywords": list(agreement.missing_from_keywords[:5]),
                    "unexpected_in_vectors": list(agreement.unexpected_in_vectors[:5]),
                    "unexpected_in_keywords": list(agreement.unexpected_in_keywords[:5]),
                }
            ),
        },
    )
    waiting = platform.catalog.oldest_unpublished_seconds(tenant_id, model_key)
    fresh = dg.AssetCheckResult(
        check_name=FRESH,
        passed=waiting <= STALENESS_LIMIT_SECONDS,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "oldest_unpublished_seconds": round(waiting, 1),
            "limit_seconds": STALENESS_LIMIT_SECONDS,
        },
    )
    tenant = platform.catalog.get_tenant(tenant_id)
    # Freshness: registration -> searchable, for versions published in the last run window.
    latencies = sorted(
        platform.catalog.publication_latency(tenant_id, model_key, since_seconds=120)
    )
    freshness: dict[str, float | int] = {}
    if latencies:
        freshness = {
            "freshness_p50_s": round(latencies[len(latencies) // 2], 2),
            "freshness_p95_s": round(
                latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))], 2
            ),
            "over_freshness_target": sum(1 for x in latencies if x > FRESHNESS_TARGET_SECONDS),
        }
    metadata: dict[str, Any] = {
        **report.as_metadata(),
        **freshness,
        "live_chunks": agreement.expected,
        "serving_model": tenant.active_model if tenant else "",
        "is_serving_model": bool(tenant and tenant.active_model == model_key),
    }
    if graph_change is not None:
        metadata["tenant_graph"] = graph_change
    return metadata, [check, fresh]


@dg.asset(
    partitions_def=tenant_model_partitions,
    deps=[embeddings, dg.AssetDep(keyword_index, partition_mapping=by_tenant)],
    group_name="publication",
    kinds={"postgres", "opensearch"},
    retry_policy=INFRA_RETRY,
    check_specs=_check_specs("published_index"),
    description="Publishes versions held by both stores for one model (a model being "
    "prepared or backfilled; the serving model is published by serving_index in the "
    "ingest run); checks the stores agree.",
)
def published_index(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    tenant_id, model_key = tenant_and_model(context)
    metadata, checks = publish_and_check(groundwork.platform(), tenant_id, model_key)
    return dg.MaterializeResult(metadata=metadata, check_results=checks)


@dg.asset(
    partitions_def=tenant_partitions,
    # index_shards: in a distributed run, one publication after every shard succeeded
    deps=[summary_layer, keyword_index, index_shards],
    group_name="publication",
    kinds={"postgres", "pgvector", "opensearch", "onnx"},
    pool="embedding",
    retry_policy=INFRA_RETRY,
    check_specs=_check_specs("serving_index"),
    description="Embeds and publishes the tenant's serving model in the ingest run itself, so "
    "a new file is searchable after one run (a second run cost a sensor hop and a worker "
    "start). Records the same work as embeddings and published_index materializations of the "
    "serving model's partition, so each model's history stays whole.",
)
def serving_index(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    tenant_id = context.partition_key
    tenant = platform.catalog.get_tenant(tenant_id)
    if tenant is None:
        # registration creates the tenant; none means it was erased meanwhile
        return dg.MaterializeResult(metadata={"skipped": f"no tenant {tenant_id}"})
    model_key = tenant.active_model
    partition = str(tenant_model_key(tenant_id, model_key))
    embedded = embedding_metadata(platform, tenant_id, model_key)
    context.log_event(
        dg.AssetMaterialization(asset_key=embeddings.key, partition=partition, metadata=embedded)
    )
    published, checks = publish_and_check(platform, tenant_id, model_key)
    context.log_event(
        dg.AssetMaterialization(
            asset_key=dg.AssetKey("published_index"), partition=partition, metadata=published
        )
    )
    return dg.MaterializeResult(
        metadata={"model": model_key, **published, "embedded": embedded.get("items", 0)},
        check_results=checks,
    )


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[published_index, serving_index])
