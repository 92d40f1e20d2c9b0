"""embeddings: chunks into pgvector, one partition per tenant x embedding model."""

import os
import warnings
from collections.abc import Iterator
from typing import Any

import dagster as dg

from assets.chunks import chunk_versions
from assets.extraction import EXTRACTION_WORKERS, extract_versions
from assets.partitions import (
    by_tenant,
    tenant_and_model,
    tenant_model_partitions,
    tenant_partitions,
)
from assets.policies import INFRA_RETRY
from assets.registration import source_registrations
from assets.summary_layer import summarize_versions, summary_layer
from groundwork.catalog import VersionShard
from groundwork.services.ingest_routing import shard_count, waiting_versions
from groundwork.stages.embeddings import embed_pending
from groundwork.stages.keyword_index import keyword_index_pending
from resources.composition.platform import Platform
from resources.dagster_glue.platform_resource import ExtractionWorkerResource, GroundworkResource
from resources.dagster_glue.shard_io import ShardIOManager

#: versions per shard of a large tenant's indexing: about 2,000 chunks at this
#: corpus's ~4 chunks a version, ~60 s of int8 bge on one core, so a shard stays
#: well inside the broker's visibility timeout (resources/dagster_glue/celery_steps.py)
#: and a lost shard costs a minute of work
SHARD_VERSIONS_ENV = "GROUNDWORK_SHARD_VERSIONS"
DEFAULT_SHARD_VERSIONS = 500


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


@dg.op(ins={"registered": dg.In(dg.Nothing)}, out=dg.DynamicOut(dict, io_manager_key="shard_io"))
def plan_shards(
    context: dg.OpExecutionContext, groundwork: GroundworkResource
) -> Iterator[dg.DynamicOutput[dict[str, Any]]]:
    """Slices of the tenant's waiting versions (by a digest of the version id,
    groundwork.catalog.VersionShard): one per `GROUNDWORK_SHARD_VERSIONS`."""
    platform = groundwork.platform()
    tenant_id = context.partition_key
    model_key = platform.serving_model(tenant_id)
    waiting = waiting_versions(platform.catalog.pending_work(tenant_id, model_key))
    count = shard_count(waiting, shard_versions())
    context.log.info(f"{waiting} versions waiting: {count} shard(s)")
    for index in range(count):
        yield dg.DynamicOutput(
            {"tenant": tenant_id, "model": model_key, "index": index, "count": count},
            mapping_key=f"shard_{index:03d}_of_{count:03d}",
            metadata={"waiting_versions": waiting, "shards": count},
        )


@dg.op(out=dg.Out(dict, io_manager_key="shard_io"), retry_policy=INFRA_RETRY, tags={"kind": "onnx"})
def ingest_shard(
    context: dg.OpExecutionContext,
    groundwork: GroundworkResource,
    extraction: ExtractionWorkerResource,
    shard: dict[str, Any],
) -> dict[str, Any]:
    """One slice's whole ingest short of publication, on one worker: extracted,
    chunked, summarized, written hidden into the keyword index and embedded
    into the serving model's vector index, by the same functions the
    single-host assets run. Every stage marks each version as it is done, so
    a retry (Dagster's policy, or the broker handing a dead worker's shard to
    another) does only what is left of the slice, and no other shard's."""
    platform = groundwork.platform()
    tenant_id, model_key = shard["tenant"], shard["model"]
    slice_ = VersionShard(shard["index"], shard["count"])
    extracted = extract_versions(context.log, platform, tenant_id, extraction, shard=slice_)
    chunked = chunk_versions(platform, tenant_id, shard=slice_)
    _, summarized = summarize_versions(platform, tenant_id, shard=slice_)
    keywords = keyword_index_pending(platform.catalog, platform.keywords, tenant_id, shard=slice_)
    embedded = embed_pending(
        platform.catalog,
        platform.vector_index(model_key),
        platform.embedder(model_key),
        tenant_id,
        shard=slice_,
    )
    stages = {
        "extract": extracted,
        "chunk": chunked,
        "summarize": summarized,
        "keyword_index": keywords,
        "embed": embedded,
    }
    report = {
        "shard": f"{slice_.index + 1}/{slice_.count}",
        "extracted": extracted.processed,
        "extraction_failed": extracted.failed,
        "chunked": chunked.processed,
        "summarized": summarized.processed,
        "keyword_versions": keywords.processed,
        "embedded_versions": embedded.processed,
        "chunks_embedded": embedded.items - embedded.reused,
        "chunks_reused": embedded.reused,
        "failed": extracted.failed + keywords.failed + embedded.failed,
        # per stage, so a run's table says where a shard's time went
        **{f"{name}_seconds": round(r.seconds, 2) for name, r in stages.items()},
        "seconds": round(sum(r.seconds for r in stages.values()), 2),
        "pid": os.getpid(),
        **provider_metadata(platform, model_key),
    }
    context.add_output_metadata(report)
    return report


#: what shards_done adds up over the shards' reports
_TOTALS = (
    "extracted",
    "chunked",
    "summarized",
    "embedded_versions",
    "keyword_versions",
    "chunks_embedded",
    "failed",
)


@dg.op(out=dg.Out(dict, io_manager_key="shard_io"))
def shards_done(context: dg.OpExecutionContext, reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Every shard succeeded (Dagster runs this only then); publication follows."""
    summary = {"shards": len(reports), **{k: sum(r[k] for r in reports) for k in _TOTALS}}
    context.add_output_metadata(summary)
    return summary


# resource_defs on a graph asset is beta in Dagster 1.13; binding the IO manager here
# keeps every materialize(ALL_ASSETS, ...) that does not select the shards unchanged
with warnings.catch_warnings():
    warnings.simplefilter("ignore", category=dg.BetaWarning)

    @dg.graph_asset(
        partitions_def=tenant_partitions,
        ins={"registered": dg.AssetIn(key=source_registrations.key, dagster_type=dg.Nothing)},
        group_name="embeddings",
        kinds={"postgres", "pgvector", "opensearch", "onnx"},
        # the shard plan and reports pass through the blob store: any host reads them
        resource_defs={
            "shard_io": ShardIOManager().get_resource_definition(),
            "extraction": EXTRACTION_WORKERS,
        },
        description="A tenant's ingest short of publication as shards (slices of its waiting "
        "versions), each extracted, chunked, summarized, keyword-indexed and embedded for the "
        "serving model on any worker host (the tenant_ingest_distributed job, in place of "
        "extracted_documents, chunks and summary_layer); one shard for a small tenant. "
        "Publication (serving_index) follows once every shard succeeded.",
    )
    def index_shards(registered: None) -> Any:
        return shards_done(plan_shards(registered).map(ingest_shard).collect())


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[embeddings, index_shards])
