"""published_index: a version becomes searchable when both stores hold it.

The check in the same step proves that what is live in pgvector and in the
keyword index equals what the catalog says is published for the tenant.
"""

import dagster as dg

from assets.embeddings import embeddings
from assets.keyword_index import keyword_index
from assets.partitions import by_tenant, tenant_and_model, tenant_model_partitions
from assets.policies import INFRA_RETRY
from groundwork.pipeline import publish_ready, store_agreement
from resources.dagster_resources import GroundworkResource

STORES_AGREE = "stores_agree"
FRESH = "fresh_enough"
#: the product's promise: a stored version is searchable within a minute
STALENESS_LIMIT_SECONDS = 60.0
#: upload -> searchable target on this machine (the product commits to 60 s)
FRESHNESS_TARGET_SECONDS = 10.0


@dg.asset(
    partitions_def=tenant_model_partitions,
    deps=[embeddings, dg.AssetDep(keyword_index, partition_mapping=by_tenant)],
    group_name="publish",
    kinds={"postgres", "opensearch"},
    retry_policy=INFRA_RETRY,
    check_specs=[
        dg.AssetCheckSpec(
            STORES_AGREE,
            asset="published_index",
            description="Postgres/pgvector and the keyword index hold exactly the published chunks.",
        ),
        dg.AssetCheckSpec(
            FRESH,
            asset="published_index",
            description=f"No stored version has waited more than {STALENESS_LIMIT_SECONDS:.0f} s "
            "to become searchable for this model.",
        ),
    ],
    description="Publishes versions held by both stores; checks the stores agree.",
)
def published_index(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    tenant_id, model_key = tenant_and_model(context)
    vectors = platform.vector_index(model_key)
    others = [v for v in platform.indexes().vectors if v.model.key != model_key]
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
    return dg.MaterializeResult(
        metadata={
            **report.as_metadata(),
            **freshness,
            "live_chunks": agreement.expected,
            "serving_model": tenant.active_model if tenant else "",
            "is_serving_model": bool(tenant and tenant.active_model == model_key),
        },
        check_results=[check, fresh],
    )
