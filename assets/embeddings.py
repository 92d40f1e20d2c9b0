"""embeddings: chunks into pgvector, one partition per tenant x embedding model."""

import math
import os
import warnings
from collections.abc import Iterator
from typing import Any

import dagster as dg

from assets.partitions import (
    by_tenant,
    tenant_and_model,
    tenant_model_partitions,
    tenant_partitions,
)
from assets.policies import INFRA_RETRY
from assets.summary_layer import summary_layer
from groundwork.catalog import VersionShard
from groundwork.stages.embeddings import embed_pending
from groundwork.stages.keyword_index import keyword_index_pending
from resources.composition.platform import Platform
from resources.dagster_glue.platform_resource import GroundworkResource
from resources.dagster_glue.shard_io import ShardIOManager

#: versions per shard of a large tenant's indexing: about 2,000 chunks at this
#: corpus's ~4 chunks a version, ~60 s of int8 bge on one core, so a shard stays
#: well inside the broker's visibility timeout (resources/dagster_glue/celery_steps.py)
#: and a lost shard costs a minute of work
SHARD_VERSIONS_ENV = "GROUNDWORK_SHARD_VERSIONS"
DEFAULT_SHARD_VERSIONS = 500
#: at most this many shards per run (steps cost the executor ~1 s each to dispatch)
MAX_SHARDS = 256


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
    return {
        **metadata,
        **provider_metadata(platform, model_key),
        "dimension": platform.model(model_key).dimension,
    }


def provider_metadata(platform: Platform, model_key: str) -> dict[str, str]:
    """Which onnxruntime execution provider embedded, and why not CUDA when it
    was asked for (a remote embedder has neither)."""
    embedder = platform.embedder(model_key)
    provider = getattr(embedder, "execution_provider", None)
    warning = getattr(embedder, "provider_warning", None)
    metadata = {"execution_provider": provider} if provider else {}
    if warning:
        metadata["provider_warning"] = warning
    return metadata


def shard_versions() -> int:
    return max(1, int(os.environ.get(SHARD_VERSIONS_ENV, str(DEFAULT_SHARD_VERSIONS))))


def shard_count(waiting: int, per_shard: int) -> int:
    """One shard below `per_shard` waiting versions (a small tenant: no fan-out)."""
    return max(1, min(MAX_SHARDS, math.ceil(waiting / per_shard)))


@dg.op(ins={"summarized": dg.In(dg.Nothing)}, out=dg.DynamicOut(dict, io_manager_key="shard_io"))
def plan_shards(
    context: dg.OpExecutionContext, groundwork: GroundworkResource
) -> Iterator[dg.DynamicOutput[dict[str, Any]]]:
    """Slices of the tenant's waiting versions (by a digest of the version id,
    groundwork.catalog.VersionShard): one per `GROUNDWORK_SHARD_VERSIONS`."""
    platform = groundwork.platform()
    tenant_id = context.partition_key
    model_key = platform.serving_model(tenant_id)
    work = platform.catalog.pending_work(tenant_id, model_key)
    waiting = max(work["embed"], work["keyword_index"])
    count = shard_count(waiting, shard_versions())
    context.log.info(f"{waiting} versions waiting: {count} shard(s)")
    for index in range(count):
        yield dg.DynamicOutput(
            {"tenant": tenant_id, "model": model_key, "index": index, "count": count},
            mapping_key=f"shard_{index:03d}_of_{count:03d}",
            metadata={"waiting_versions": waiting, "shards": count},
        )


@dg.op(out=dg.Out(dict, io_manager_key="shard_io"), retry_policy=INFRA_RETRY, tags={"kind": "onnx"})
def index_shard(
    context: dg.OpExecutionContext, groundwork: GroundworkResource, shard: dict[str, Any]
) -> dict[str, Any]:
    """One slice: written hidden into the keyword index and embedded into the
    serving model's vector index; each version marked as it is done, so a
    retry (Dagster's policy, or the broker handing a dead worker's shard to
    another) does only what is left of the slice."""
    platform = groundwork.platform()
    tenant_id, model_key = shard["tenant"], shard["model"]
    slice_ = VersionShard(shard["index"], shard["count"])
    keywords = keyword_index_pending(platform.catalog, platform.keywords, tenant_id, shard=slice_)
    embedded = embed_pending(
        platform.catalog,
        platform.vector_index(model_key),
        platform.embedder(model_key),
        tenant_id,
        shard=slice_,
    )
    report = {
        "shard": f"{slice_.index + 1}/{slice_.count}",
        "keyword_versions": keywords.processed,
        "embedded_versions": embedded.processed,
        "chunks_embedded": embedded.items - embedded.reused,
        "chunks_reused": embedded.reused,
        "failed": keywords.failed + embedded.failed,
        "seconds": round(keywords.seconds + embedded.seconds, 2),
        "pid": os.getpid(),
        **provider_metadata(platform, model_key),
    }
    context.add_output_metadata(report)
    return report


@dg.op(out=dg.Out(dict, io_manager_key="shard_io"))
def shards_done(context: dg.OpExecutionContext, reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Every shard succeeded (Dagster runs this only then); publication follows."""
    summary = {
        "shards": len(reports),
        "embedded_versions": sum(r["embedded_versions"] for r in reports),
        "keyword_versions": sum(r["keyword_versions"] for r in reports),
        "chunks_embedded": sum(r["chunks_embedded"] for r in reports),
        "failed": sum(r["failed"] for r in reports),
    }
    context.add_output_metadata(summary)
    return summary


# resource_defs on a graph asset is beta in Dagster 1.13; binding the IO manager here
# keeps every materialize(ALL_ASSETS, ...) that does not select the shards unchanged
with warnings.catch_warnings():
    warnings.simplefilter("ignore", category=dg.BetaWarning)

    @dg.graph_asset(
        partitions_def=tenant_partitions,
        ins={"summarized": dg.AssetIn(key=summary_layer.key, dagster_type=dg.Nothing)},
        group_name="embeddings",
        kinds={"postgres", "pgvector", "opensearch", "onnx"},
        # the shard plan and reports pass through the blob store: any host reads them
        resource_defs={"shard_io": ShardIOManager().get_resource_definition()},
        description="A tenant's keyword indexing and serving-model embedding as shards (slices of "
        "its waiting versions) that run on any worker host (the tenant_ingest_distributed job); "
        "one shard for a small tenant. Publication (serving_index) follows once every shard "
        "succeeded.",
    )
    def index_shards(summarized: None) -> Any:
        return shards_done(plan_shards(summarized).map(index_shard).collect())


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[embeddings, index_shards])
