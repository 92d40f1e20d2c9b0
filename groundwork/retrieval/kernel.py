"""Hybrid search: two authorization-scoped legs fused by reciprocal rank."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from groundwork.citations import Citation, excerpt
from groundwork.errors import InvalidRequest
from groundwork.ports import (
    AccessScope,
    ChunkReader,
    EmbeddingProvider,
    KeywordIndex,
    SearchFilters,
    VectorIndex,
)
from groundwork.retrieval.fusion import reciprocal_rank_fusion
from groundwork.retrieval.outcome import (
    Found,
    Hit,
    NothingAccessible,
    NothingCloseEnough,
    NothingMatches,
    RetrievalOutcome,
)

MAX_QUERY_CHARS = 2_000
MAX_LIMIT = 100
MAX_CANDIDATES = 1_000


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    VECTOR = "vector"
    KEYWORD = "keyword"


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    limit: int = 10
    candidates: int = 50
    mode: SearchMode = SearchMode.HYBRID
    filters: SearchFilters | None = None

    def validated(self) -> SearchRequest:
        if not self.query.strip():
            raise InvalidRequest("query must not be empty")
        if len(self.query) > MAX_QUERY_CHARS:
            raise InvalidRequest(
                f"query is {len(self.query)} characters; the limit is {MAX_QUERY_CHARS}"
            )
        if not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidRequest(f"limit must be between 1 and {MAX_LIMIT}")
        if not self.limit <= self.candidates <= MAX_CANDIDATES:
            raise InvalidRequest(f"candidates must be between limit and {MAX_CANDIDATES}")
        return self


@dataclass(frozen=True, slots=True)
class SearchEngines:
    embedder: EmbeddingProvider
    vectors: VectorIndex
    keywords: KeywordIndex
    reader: ChunkReader


def hybrid_search(
    scope: AccessScope,
    request: SearchRequest,
    engines: SearchEngines,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> RetrievalOutcome:
    request = request.validated()
    if not scope.subjects:
        return NothingAccessible()
    legs: dict[str, list[str]] = {}
    vector_count = 0
    if request.mode in (SearchMode.HYBRID, SearchMode.VECTOR):
        query_vector = engines.embedder.embed_query(request.query)
        vector_hits = engines.vectors.search(
            scope, query_vector, request.candidates, request.filters
        )
        vector_count = len(vector_hits)
        floor = engines.vectors.model.semantic_floor
        legs["vector"] = [h.chunk_id for h in vector_hits if h.score >= floor]
    if request.mode in (SearchMode.HYBRID, SearchMode.KEYWORD):
        keyword_hits = engines.keywords.search(
            scope, request.query, request.candidates, request.filters
        )
        legs["keyword"] = [h.chunk_id for h in keyword_hits]

    if not any(legs.values()):
        if vector_count:
            return NothingCloseEnough()
        if not engines.reader.has_accessible_sources(scope):
            return NothingAccessible()
        return NothingMatches()

    fused = reciprocal_rank_fusion(legs)
    views = engines.reader.load_chunks(scope, [c.chunk_id for c in fused])
    retrieved_at = now()
    hits: list[Hit] = []
    for candidate in fused:
        view = views.get(candidate.chunk_id)
        if view is None:
            continue
        citation = Citation(
            source_id=view.source_id,
            source_version_id=view.version_id,
            chunk_id=view.chunk_id,
            content_hash=view.content_hash,
            title=view.title,
            location=view.location,
            heading_path=view.heading_path,
            excerpt=excerpt(view.body),
            retrieved_at=retrieved_at,
            low_confidence=view.low_confidence,
        )
        hits.append(Hit(len(hits) + 1, candidate.score, candidate.ranks, view, citation))
        if len(hits) == request.limit:
            break
    if not hits:
        return NothingMatches()
    return Found(tuple(hits))
