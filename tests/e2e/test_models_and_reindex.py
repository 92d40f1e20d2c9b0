"""Model versions (gated cutover, rollback), embedding reuse across versions,
and re-index work that resumes after an interruption."""

from __future__ import annotations

import uuid

import dagster as dg
import pytest

from assets.partitions import tenant_model_key
from groundwork.embedding_models import MINILM_L6_V2_INT8
from groundwork.errors import EngineUnavailable
from groundwork.model_cutover import Switched, SwitchRefused, rollback_model, switch_model
from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found
from groundwork.stages.embeddings import embed_pending
from groundwork.stages.summary_layer import summarize_pending
from pipelines.definitions import ALL_ASSETS
from resources.composition.platform import Platform
from tests.e2e.helpers import resource, run_pipeline, write_inbox

LONG = "# Handbook\n\n" + "\n\n".join(
    f"## Topic {i}\n\n"
    + " ".join(f"Paragraph {i} sentence {j} about policy number {i}." for j in range(30))
    for i in range(6)
)


@pytest.fixture
def tenant(platform: Platform, index_prefix: str) -> tuple[str, dg.DagsterInstance]:
    tenant_id = f"m-{uuid.uuid4().hex[:8]}"
    write_inbox(
        platform.settings.inbox_dir,
        tenant_id,
        {"handbook.md": LONG, "quota.md": "# Quota\n\nERR-4021 means over quota.\n"},
    )
    instance = dg.DagsterInstance.ephemeral()
    run_pipeline(instance, tenant_id, platform.settings.default_model_key, resource(index_prefix))
    return tenant_id, instance


def test_a_new_model_is_refused_until_backfilled_then_switched_and_rolled_back(
    platform: Platform, tenant, index_prefix: str
) -> None:
    tenant_id, instance = tenant
    minilm = platform.vector_index(MINILM_L6_V2_INT8.key)
    refused = switch_model(platform.catalog, minilm, platform.keywords, tenant_id)
    assert isinstance(refused, SwitchRefused) and "to embed" in refused.reasons[0]
    # the backfill of the new model's partition
    result = dg.materialize(
        ALL_ASSETS,
        selection=["embeddings", "published_index"],
        partition_key=tenant_model_key(tenant_id, MINILM_L6_V2_INT8.key),
        instance=instance,
        resources={"groundwork": resource(index_prefix)},
    )
    assert result.success
    switched = switch_model(platform.catalog, minilm, platform.keywords, tenant_id)
    assert switched == Switched(platform.settings.default_model_key, MINILM_L6_V2_INT8.key)
    tenant_row = platform.catalog.get_tenant(tenant_id)
    assert tenant_row is not None and tenant_row.active_model == MINILM_L6_V2_INT8.key
    outcome = hybrid_search(
        AccessScope(tenant_id, (f"tenant:{tenant_id}",)),
        SearchRequest("ERR-4021"),
        platform.search_engines(MINILM_L6_V2_INT8.key),
    )
    assert isinstance(outcome, Found) and outcome.hits[0].chunk.filename == "quota.md"
    back = rollback_model(platform.catalog, tenant_id)
    assert back.to_model == platform.settings.default_model_key
    # the first model's vectors were kept: serving it again needs no re-embedding
    vectors = platform.vector_index(platform.settings.default_model_key)
    assert vectors.chunk_ids(tenant_id, live_only=True)


def test_a_one_paragraph_edit_re_embeds_one_chunk(
    platform: Platform, tenant, index_prefix: str
) -> None:
    tenant_id, instance = tenant
    edited = LONG.replace("Paragraph 3 sentence 7 about", "Paragraph 3 sentence 7, revised, about")
    write_inbox(platform.settings.inbox_dir, tenant_id, {"handbook.md": edited})
    results = run_pipeline(
        instance, tenant_id, platform.settings.default_model_key, resource(index_prefix)
    )
    embedded = results[1].asset_materializations_for_node("embeddings")[0].metadata
    written, reused = embedded["items_written"].value, embedded["embeddings_reused"].value
    assert written >= 6 and written - reused == 1


def test_interrupted_re_index_resumes_losing_at_most_one_batch(platform: Platform, tenant) -> None:
    tenant_id, _ = tenant
    embedder = platform.embedder(MINILM_L6_V2_INT8.key)
    vectors = platform.vector_index(MINILM_L6_V2_INT8.key)
    embed_pending(platform.catalog, vectors, embedder, tenant_id)  # the existing documents first
    for i in range(5):
        write_inbox(
            platform.settings.inbox_dir,
            tenant_id,
            {f"extra-{i}.md": f"# Extra {i}\n\nExtra document number {i}.\n"},
        )
    # register + extract + chunk the new files without embedding them
    from groundwork.stages.chunks import chunk_pending
    from groundwork.stages.extraction import extract_pending
    from groundwork.stages.keyword_index import keyword_index_pending
    from tests.e2e.helpers import inbox_pass

    synced = inbox_pass(platform, tenant_id)
    assert synced.created == 5
    extract_pending(platform.catalog, platform.blobs, tenant_id)
    chunk_pending(platform.catalog, tenant_id, embedder.count_tokens)
    summarize_pending(platform.catalog, tenant_id, embedder.count_tokens)
    keyword_index_pending(platform.catalog, platform.keywords, tenant_id)

    class Flaky:
        """Fails after two documents: the engine went away mid re-index."""

        def __init__(self) -> None:
            self.calls = 0

        @property
        def model(self):  # type: ignore[no-untyped-def]
            return embedder.model

        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            self.calls += 1
            if self.calls > 2:
                raise EngineUnavailable("embedding service lost")
            return embedder.embed_documents(texts)

        def embed_query(self, text):  # type: ignore[no-untyped-def]
            return embedder.embed_query(text)

        def count_tokens(self, text):  # type: ignore[no-untyped-def]
            return embedder.count_tokens(text)

    before = platform.catalog.pending_work(tenant_id, MINILM_L6_V2_INT8.key)["embed"]
    with pytest.raises(EngineUnavailable):
        embed_pending(platform.catalog, vectors, Flaky(), tenant_id, embed_batch=1)
    after_crash = platform.catalog.pending_work(tenant_id, MINILM_L6_V2_INT8.key)["embed"]
    assert before - after_crash >= 1  # finished versions stay finished
    resumed = embed_pending(platform.catalog, vectors, embedder, tenant_id)
    assert resumed.processed == after_crash
    assert platform.catalog.pending_work(tenant_id, MINILM_L6_V2_INT8.key)["embed"] == 0


def test_the_old_models_vectors_are_retired_only_after_the_grace_period(
    platform: Platform, tenant, index_prefix: str
) -> None:
    from groundwork.model_cutover import retire_models

    tenant_id, instance = tenant
    default = platform.settings.default_model_key
    minilm = platform.vector_index(MINILM_L6_V2_INT8.key)
    dg.materialize(
        ALL_ASSETS,
        selection=["embeddings", "published_index"],
        partition_key=tenant_model_key(tenant_id, MINILM_L6_V2_INT8.key),
        instance=instance,
        resources={"groundwork": resource(index_prefix)},
    )
    assert isinstance(
        switch_model(platform.catalog, minilm, platform.keywords, tenant_id), Switched
    )
    indexes = {v.model.key: v for v in platform.indexes().vectors}
    assert retire_models(platform.catalog, indexes, tenant_id, grace_seconds=3600) == {}
    assert platform.vector_index(default).chunk_ids(tenant_id, live_only=False)
    retired = retire_models(platform.catalog, indexes, tenant_id, grace_seconds=0)
    assert retired.get(default, 0) > 0
    assert platform.vector_index(default).chunk_ids(tenant_id, live_only=False) == set()
    with pytest.raises(Exception, match="no previous model"):
        rollback_model(platform.catalog, tenant_id)
    assert minilm.chunk_ids(tenant_id, live_only=True)  # the serving model is untouched


def test_every_model_partition_has_a_vector_table_shaped_like_the_first(
    platform: Platform,
) -> None:
    """A model added to KNOWN_MODELS needs its own table with every column,
    index and wall policy the migrations gave the first one (a table created
    from 0002 alone would lack tags, layer, the live-tenant index)."""
    from groundwork.embedding_models import BGE_SMALL_EN_V15_Q, KNOWN_MODELS

    def shape(model_key: str) -> tuple[object, ...]:
        table = f"embeddings_{model_key}"
        with platform.pool.connection() as conn:
            columns = conn.execute(
                "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute "
                "WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped "
                "ORDER BY attname",
                (table,),
            ).fetchall()
            indexes = conn.execute(
                # tenants' own graphs are data (PgVectorIndex.refresh_tenant_graphs)
                "SELECT replace(replace(indexdef, %s, 'T'), %s, 'T') FROM pg_indexes "
                "WHERE tablename = %s AND NOT starts_with(indexname, %s) ORDER BY 1",
                (table, table, table, f"{table}_tg_"),
            ).fetchall()
            policies = conn.execute(
                "SELECT policyname, cmd, qual FROM pg_policies WHERE tablename = %s ORDER BY 1",
                (table,),
            ).fetchall()
            security = conn.execute(
                "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = to_regclass(%s)",
                (table,),
            ).fetchall()
        return tuple(columns), tuple(indexes), tuple(policies), tuple(security)

    def sized(found: tuple[object, ...], dimension: int) -> tuple[object, ...]:
        """The shape with the embedding column's size checked against the
        model's and then set aside: models of other sizes are alike otherwise."""
        columns = tuple(found[0])  # type: ignore[arg-type]
        embedding = [c for c in columns if c[0] == "embedding"]
        assert embedding and embedding[0][1] == f"vector({dimension})", embedding
        return (tuple(c for c in columns if c[0] != "embedding"), *found[1:])

    first = sized(shape(BGE_SMALL_EN_V15_Q.key), BGE_SMALL_EN_V15_Q.dimension)
    assert first[0] and first[1] and first[2]
    for key, model in KNOWN_MODELS.items():
        assert sized(shape(key), model.dimension) == first, key
