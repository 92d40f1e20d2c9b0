"""A large tenant's indexing as shards: Dagster dynamic mapping over slices of
its waiting versions (assets/embeddings.py: index_shards), then one
publication (serving_index) once every shard succeeded. Run in process here;
tests/e2e/test_several_hosts.py runs the same job on two worker processes."""

from __future__ import annotations

import dagster as dg
import pytest

from assets.embeddings import shard_count
from groundwork.catalog import VersionShard
from groundwork.stages.embeddings import embed_pending
from groundwork.stages.keyword_index import keyword_index_pending
from pipelines.definitions import ALL_ASSETS
from resources.composition.platform import Platform
from tests.e2e.helpers import resource, tenant_with_notes

DISTRIBUTED_STAGES = [
    "extracted_documents",
    "chunks",
    "summary_layer",
    "index_shards",
    "keyword_index",
    "serving_index",
]


def test_a_small_tenant_is_one_shard_and_a_large_one_fans_out() -> None:
    assert shard_count(0, 500) == 1
    assert shard_count(10, 500) == 1
    assert shard_count(500, 500) == 1
    assert shard_count(501, 500) == 2
    assert shard_count(10**7, 500) == 256  # bounded: every step costs dispatch


def test_shards_index_every_version_once_and_publication_follows(
    platform: Platform, index_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROUNDWORK_SHARD_VERSIONS", "4")
    tenant = tenant_with_notes(platform, "shards", 10)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenant", [tenant])
    groundwork = resource(index_prefix)
    result = dg.materialize(
        ALL_ASSETS,
        selection=DISTRIBUTED_STAGES,
        partition_key=tenant,
        instance=instance,
        resources={"groundwork": groundwork},
    )
    assert result.success
    shard_steps = sorted(
        str(e.step_key)
        for e in result.all_events
        if e.event_type_value == "STEP_SUCCESS" and "ingest_shard[" in (e.step_key or "")
    )
    assert len(shard_steps) == 3, shard_steps  # ceil(10 / 4)
    reports = [
        e.event_specific_data.metadata  # type: ignore[union-attr]
        for e in result.all_events
        if e.event_type_value == "STEP_OUTPUT" and "ingest_shard[" in (e.step_key or "")
    ]
    # which onnxruntime provider embedded each shard (this machine: the CPU build)
    assert {r["execution_provider"].value for r in reports} == {"CPUExecutionProvider"}
    assert sum(int(r["embedded_versions"].value) for r in reports) == 10  # type: ignore[arg-type,misc]
    assert sum(int(r["keyword_versions"].value) for r in reports) == 10  # type: ignore[arg-type,misc]
    # serving_index found nothing left to embed, and published all ten at once
    [served] = [
        m.metadata
        for m in result.asset_materializations_for_node("serving_index")
        if m.asset_key == dg.AssetKey("serving_index")
    ]
    assert served["embedded"].value == 0
    assert served["processed"].value == 10
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["stores_agree"] is True
    model = platform.settings.default_model_key
    assert len(platform.catalog.live_chunk_ids(tenant, model)) >= 10


def test_a_shard_run_again_redoes_nothing_and_leaves_other_shards_alone(
    platform: Platform, index_prefix: str
) -> None:
    from groundwork.stages.chunks import chunk_pending
    from groundwork.stages.extraction import extract_pending
    from groundwork.stages.summary_layer import summarize_pending
    from tests.e2e.helpers import publish_registered  # noqa: F401  (same stages, in process)

    tenant = tenant_with_notes(platform, "reshard", 8)
    model = platform.settings.default_model_key
    embedder = platform.embedder(model)
    extract_pending(platform.catalog, platform.blobs, tenant)
    chunk_pending(platform.catalog, tenant, embedder.count_tokens)
    summarize_pending(platform.catalog, tenant, embedder.count_tokens)
    vectors = platform.vector_index(model)
    first, second = VersionShard(0, 2), VersionShard(1, 2)
    done = embed_pending(platform.catalog, vectors, embedder, tenant, shard=first)
    keyword_index_pending(platform.catalog, platform.keywords, tenant, shard=first)
    assert done.processed > 0
    again = embed_pending(platform.catalog, vectors, embedder, tenant, shard=first)
    assert again.processed == 0 and again.items == 0  # a retry of a finished shard: nothing
    other = embed_pending(platform.catalog, vectors, embedder, tenant, shard=second)
    assert done.processed + other.processed == 8
    assert platform.catalog.batches_to_embed(tenant, model, 100) == []
