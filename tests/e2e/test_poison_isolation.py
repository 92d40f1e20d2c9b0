"""One document's problem is that document's (invariant 12): a file holding a
40,000-character token with no whitespace used to make OpenSearch refuse the
whole bulk ("immense term in field content.ident") and fail the keyword_index
stage for every document of the tenant."""

from __future__ import annotations

import uuid
from typing import Any

import dagster as dg

from groundwork.chunking import Chunk, chunk_id_for
from groundwork.documents import Location
from groundwork.ports import AccessScope, IndexedChunk
from groundwork.retrieval.kernel import SearchMode, SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found
from groundwork.stages.chunks import chunk_pending
from groundwork.stages.embeddings import embed_pending
from groundwork.stages.extraction import extract_pending
from groundwork.stages.keyword_index import keyword_index_pending
from groundwork.stages.publication import publish_ready
from groundwork.stages.registration import register_file
from groundwork.stages.summary_layer import summarize_pending
from resources.composition.platform import Platform
from resources.opensearch.keyword_index import INDEX_SETTINGS, OpenSearchKeywordIndex
from tests.e2e.helpers import resource, run_pipeline, write_inbox

POISON = "".join("abcdefghijklmnopqrstuvwxyz0123456789"[i % 36] for i in range(40_000))


def _found_sources(platform: Platform, tenant: str, query: str) -> set[str]:
    outcome = hybrid_search(
        AccessScope(tenant, (f"tenant:{tenant}",)),
        SearchRequest(query, mode=SearchMode.KEYWORD),
        platform.search_engines(platform.settings.default_model_key),
    )
    assert isinstance(outcome, Found), outcome
    return {hit.citation.source_id for hit in outcome.hits}


def test_a_forty_thousand_character_token_does_not_fail_the_tenant(
    platform: Platform, index_prefix: str
) -> None:
    tenant = f"p-{uuid.uuid4().hex[:8]}"
    write_inbox(
        platform.settings.inbox_dir,
        tenant,
        {
            "normal.md": "# Boiler\n\nThe boiler pressure relief valve opens at 3 bar.\n",
            "poison.txt": POISON + "\n",
        },
    )
    instance = dg.DagsterInstance.ephemeral()
    results = run_pipeline(
        instance, tenant, platform.settings.default_model_key, resource(index_prefix)
    )
    assert [r.success for r in results] == [True, True]
    scope = AccessScope(tenant, (f"tenant:{tenant}",))
    statuses = {
        s["filename"]: s
        for s in (
            platform.catalog.source_status(scope, source_id)
            for source_id, _ in platform.catalog.inbox_sources(tenant).values()
        )
        if s is not None
    }
    assert statuses["normal.md"]["failure_reason"] is None
    found = _found_sources(platform, tenant, "boiler relief valve")
    normal_id = next(
        source_id
        for origin, (source_id, _) in platform.catalog.inbox_sources(tenant).items()
        if origin.endswith("normal.md")
    )
    assert normal_id in found


def test_the_keyword_index_takes_an_immense_term_without_refusing(platform: Platform) -> None:
    """The analyzers cap a term's length, so OpenSearch's 32,766-byte term limit
    is never reached whatever reaches the index."""
    assert isinstance(platform.keywords, OpenSearchKeywordIndex)
    tenant = f"q-{uuid.uuid4().hex[:8]}"
    chunk = IndexedChunk(
        chunk_id=f"ch_{uuid.uuid4().hex}",
        tenant_id=tenant,
        source_id="src_poison",
        version_id="ver_poison",
        subjects=("team:a",),
        media_type="text/plain",
        title="poison.txt",
        content=f"gasket {POISON} flange",
        content_hash="h",
    )
    assert platform.keywords.upsert([chunk]) == 1
    platform.keywords.set_versions_live(tenant, ["ver_poison"], True)
    hits = platform.keywords.search(AccessScope(tenant, ("team:a",)), "gasket flange", 5)
    assert [h.chunk_id for h in hits] == [chunk.chunk_id]


def _index_from_before_the_term_cap(keywords: OpenSearchKeywordIndex, tenant: str) -> None:
    """An existing tenant index keeps the analyzers it was created with (they
    cannot change on an open index): create one without the term cap."""
    analysis: dict[str, Any] = {
        "tokenizer": INDEX_SETTINGS["analysis"]["tokenizer"],
        "filter": {
            "trim_identifier_edges": INDEX_SETTINGS["analysis"]["filter"]["trim_identifier_edges"],
            "non_empty": {"type": "length", "min": 1},
        },
        "analyzer": {
            "groundwork_text": {
                "type": "custom",
                "tokenizer": "standard",
                "filter": ["lowercase", "asciifolding", "porter_stem"],
            },
            "groundwork_identifier": {
                "type": "custom",
                "tokenizer": "identifier_tokenizer",
                "filter": ["lowercase", "asciifolding", "trim_identifier_edges", "non_empty"],
            },
        },
    }
    keywords.client.indices.create(
        index=keywords.index_for(tenant), body={"settings": {"analysis": analysis}}
    )


def test_a_refused_version_fails_alone_and_the_others_are_published(platform: Platform) -> None:
    assert isinstance(platform.keywords, OpenSearchKeywordIndex)
    tenant = f"r-{uuid.uuid4().hex[:8]}"
    model = platform.settings.default_model_key
    platform.catalog.ensure_tenant(tenant, tenant, model)
    _index_from_before_the_term_cap(platform.keywords, tenant)
    registered = {
        name: register_file(
            platform.catalog,
            platform.blobs,
            tenant_id=tenant,
            origin=f"api:{name}",
            filename=name,
            data=text.encode(),
            subjects=[f"tenant:{tenant}"],
            media_type="text/markdown",
        )
        for name, text in {
            "normal.md": "# Pump\n\nThe sump pump impeller is replaced every two years.\n",
            "poison.md": "# Blob\n\nplaceholder\n",
        }.items()
    }
    extract_pending(platform.catalog, platform.blobs, tenant)
    embedder = platform.embedder(model)
    chunk_pending(platform.catalog, tenant, embedder.count_tokens)
    summarize_pending(platform.catalog, tenant, embedder.count_tokens)
    # chunks written by an earlier chunker, before the character bound
    poison = registered["poison.md"]
    version = next(
        v
        for v in platform.catalog.batches_to_keyword_index(tenant, 10)
        if v.version.version_id == poison.version_id
    ).version
    platform.catalog.replace_chunks(
        version,
        [
            Chunk(
                chunk_id=chunk_id_for(tenant, poison.version_id, 0),
                tenant_id=tenant,
                source_id=poison.source_id,
                version_id=poison.version_id,
                position=0,
                heading_path=(),
                body=POISON,
                location=Location(line_start=1),
                kind="text",
                token_count=10,
            )
        ],
    )

    report = keyword_index_pending(platform.catalog, platform.keywords, tenant)
    assert report.failed == 1 and report.processed == 1
    assert report.failures == {"poison.md": "unindexable"}
    scope = AccessScope(tenant, (f"tenant:{tenant}",))
    status = platform.catalog.source_status(scope, poison.source_id)
    assert status is not None and status["failure_reason"] == "unindexable"
    # the failed version is no one's pending work any more
    pending = platform.catalog.pending_work(tenant, model)
    assert pending["keyword_index"] == 0 and pending["embed"] == 1  # only the normal one

    vectors = platform.vector_index(model)
    embed_pending(platform.catalog, vectors, embedder, tenant)
    published = publish_ready(platform.catalog, vectors, platform.keywords, tenant)
    assert published.processed == 1
    assert registered["normal.md"].source_id in _found_sources(platform, tenant, "sump impeller")


class _NaNForMarkedText:
    """The real embedder, except that a text holding the marker embeds to NaN
    (as a broken model output would): pgvector refuses that vector."""

    def __init__(self, inner: Any, marker: str) -> None:
        self.inner = inner
        self.marker = marker
        self.model = inner.model

    def count_tokens(self, text: str) -> int:
        return int(self.inner.count_tokens(text))

    def embed_query(self, text: str) -> tuple[float, ...]:
        return tuple(self.inner.embed_query(text))

    def embed_documents(self, texts: list[str]) -> list[tuple[float, ...]]:
        vectors = self.inner.embed_documents(texts)
        return [
            tuple(float("nan") for _ in vector) if self.marker in text else tuple(vector)
            for text, vector in zip(texts, vectors, strict=True)
        ]


def test_a_version_the_vector_store_refuses_fails_alone(platform: Platform) -> None:
    tenant = f"v-{uuid.uuid4().hex[:8]}"
    model = platform.settings.default_model_key
    platform.catalog.ensure_tenant(tenant, tenant, model)
    marker = f"nanmarker{uuid.uuid4().hex[:8]}"
    registered = {
        name: register_file(
            platform.catalog,
            platform.blobs,
            tenant_id=tenant,
            origin=f"api:{name}",
            filename=name,
            data=text.encode(),
            subjects=[f"tenant:{tenant}"],
            media_type="text/markdown",
        )
        for name, text in {
            "good.md": "# Fan\n\nThe condenser fan bearing is greased twice a year.\n",
            "bad.md": f"# Odd\n\nThis text embeds badly: {marker}.\n",
        }.items()
    }
    extract_pending(platform.catalog, platform.blobs, tenant)
    embedder = _NaNForMarkedText(platform.embedder(model), marker)
    chunk_pending(platform.catalog, tenant, embedder.count_tokens)
    summarize_pending(platform.catalog, tenant, embedder.count_tokens)
    keyword_index_pending(platform.catalog, platform.keywords, tenant)
    vectors = platform.vector_index(model)
    report = embed_pending(platform.catalog, vectors, embedder, tenant)
    assert report.processed == 1 and report.failures == {"bad.md": "unindexable"}
    scope = AccessScope(tenant, (f"tenant:{tenant}",))
    status = platform.catalog.source_status(scope, registered["bad.md"].source_id)
    assert status is not None and status["failure_reason"] == "unindexable"
    assert platform.catalog.pending_work(tenant, model)["embed"] == 0
    assert publish_ready(platform.catalog, vectors, platform.keywords, tenant).processed == 1
    assert registered["good.md"].source_id in _found_sources(platform, tenant, "condenser fan")
