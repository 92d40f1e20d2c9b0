"""Hybrid search: two authorization-scoped legs fused by reciprocal rank."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum

from groundwork.citations import Citation, excerpt
from groundwork.errors import EngineUnavailable, InvalidRequest, StoreError
from groundwork.ports import (
    AccessScope,
    ChunkReader,
    EmbeddingProvider,
    KeywordIndex,
    ScoredChunk,
    SearchFilters,
    VectorIndex,
)
from groundwork.retrieval.fusion import FusedCandidate, reciprocal_rank_fusion
from groundwork.retrieval.outcome import (
    ChunkView,
    Found,
    Hit,
    NothingAccessible,
    NothingCloseEnough,
    NothingMatches,
    RetrievalOutcome,
)
from groundwork.retrieval.query import InterpretedQuery, interpret
from groundwork.retrieval.rerank import RerankCandidate, Reranker
from groundwork.tracing import LEG, carried, span

MAX_QUERY_CHARS = 2_000
MAX_LIMIT = 100
MAX_CANDIDATES = 1_000


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    VECTOR = "vector"
    KEYWORD = "keyword"


@dataclass(frozen=True, slots=True)
class RetrievalPolicy:
    """Fusion and floors. Leg weights scale reciprocal-rank terms (ranks only).

    The defaults are chosen for corpora nobody has judged, from cross-validated
    figures on two that were (evals/fusion_cv.py, nDCG@10, bge-small int8):
    SciFact train wants the keyword leg light (0.5-0.75), SQuAD heavy (1.25),
    both want a small k (rank 1 of a leg counts for much more than rank 10).
    k 5 with equal weights keeps hybrid above each leg on both (SciFact 0.754
    against vector 0.747 and keyword 0.694; SQuAD 0.892 against keyword 0.887
    and vector 0.773) and lifts identifier queries (hybrid + reranker MRR@10
    0.364 -> 0.935; keyword alone 0.940; 1.000 for both since the keyword
    leg's exact clause for codes and the reranker's lookup lift). The former k 60 with keyword 0.5 was
    tuned in sample on SciFact (0.752) and put SQuAD hybrid below its keyword
    leg (0.872). A tenant with its own golden set is tuned out of fold instead."""

    rrf_k: int = 5
    leg_weights: tuple[tuple[str, float], ...] = (("vector", 1.0), ("keyword", 1.0))
    #: fused hits scoring below this fraction of the best hit are dropped
    relative_floor: float = 0.2
    #: multiplier on the fused score of chunks from low-confidence OCR/transcription
    low_confidence_weight: float = 0.8


@dataclass(frozen=True, slots=True)
class FusionConstants:
    """A tenant's own fusion constants, chosen out of fold on its golden set by
    the eval (evals/fusion_cv.py) and adopted only when they beat the defaults
    there; a tenant without them searches with RetrievalPolicy's defaults.
    They were tuned on one model's rankings, so they serve only that model: a
    tenant that switches models searches with the defaults until an eval of
    the new model decides again."""

    rrf_k: int
    keyword_weight: float
    depth: int  # candidates taken from each leg
    model_key: str = ""  # the model they were tuned on; "" (not stamped): serves none

    def serves(self, model_key: str) -> bool:
        return bool(self.model_key) and self.model_key == model_key

    def applied_to(self, policy: RetrievalPolicy) -> RetrievalPolicy:
        return replace(
            policy,
            rrf_k=self.rrf_k,
            leg_weights=(("vector", 1.0), ("keyword", self.keyword_weight)),
        )

    def to_dict(self) -> dict[str, float | int | str]:
        return {
            "rrf_k": self.rrf_k,
            "keyword_weight": self.keyword_weight,
            "depth": self.depth,
            "model": self.model_key,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> FusionConstants:
        return cls(
            int(str(data["rrf_k"])),
            float(str(data["keyword_weight"])),
            int(str(data["depth"])),
            str(data.get("model", "")),
        )

    def validated(self) -> FusionConstants:
        if not 1 <= self.rrf_k <= 1000 or not 0.0 <= self.keyword_weight <= 10.0:
            raise InvalidRequest("fusion constants out of range (k 1-1000, keyword weight 0-10)")
        if not 1 <= self.depth <= MAX_CANDIDATES:
            raise InvalidRequest(f"fusion depth must be between 1 and {MAX_CANDIDATES}")
        return self


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    limit: int = 10
    candidates: int = 50
    mode: SearchMode = SearchMode.HYBRID
    filters: SearchFilters | None = None
    rerank: bool = True
    #: sources whose matching chunks go first (still subject to access and the floors)
    pinned_source_ids: tuple[str, ...] = ()

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
    reranker: Reranker | None = None
    policy: RetrievalPolicy = RetrievalPolicy()
    #: ranks when `reranker` (a remote one) cannot answer; the outcome says so
    fallback_reranker: Reranker | None = None


_LEG_POOL: ThreadPoolExecutor | None = None
_LEG_POOL_LOCK = threading.Lock()


def _leg_pool() -> ThreadPoolExecutor:
    """Threads for the keyword leg, made on first use (never at import)."""
    global _LEG_POOL
    with _LEG_POOL_LOCK:
        if _LEG_POOL is None:
            _LEG_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="keyword-leg")
        return _LEG_POOL


class _InFlight:
    """Hybrid searches running in this process now."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def enter(self) -> int:
        with self._lock:
            self.count += 1
            return self.count

    def leave(self) -> None:
        with self._lock:
            self.count -= 1


_IN_FLIGHT = _InFlight()


def overlap_limit() -> int:
    """Searches in flight up to which the legs overlap: the cores this process
    may run on. Beyond it every core is busy with other searches, so running
    the keyword leg on its own thread saves no time and its hand-off costs CPU
    (0.4 of the API's 3.4 ms per search at 8 clients, bench/search_profile.py)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


def hybrid_search(
    scope: AccessScope,
    request: SearchRequest,
    engines: SearchEngines,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> RetrievalOutcome:
    request = request.validated()
    if not scope.subjects:
        return NothingAccessible()
    try:
        overlap = _IN_FLIGHT.enter() <= overlap_limit()
        return _hybrid_search(scope, request, engines, now, overlap)
    finally:
        _IN_FLIGHT.leave()


def _hybrid_search(
    scope: AccessScope,
    request: SearchRequest,
    engines: SearchEngines,
    now: Callable[[], datetime],
    overlap: bool,
) -> RetrievalOutcome:
    interpreted = interpret(request.query)
    legs: dict[str, list[str]] = {}
    leg_scores: dict[str, dict[str, float]] = {}
    vector_count = 0
    keyword_leg: Future[list[ScoredChunk]] | None = None
    if request.mode == SearchMode.HYBRID and overlap:
        # the keyword leg waits on OpenSearch while this thread embeds the query
        # and waits on pgvector: the legs overlap (5 ms less per search, measured)
        keyword_leg = _leg_pool().submit(
            carried(_keyword_leg),
            engines.keywords,
            scope,
            interpreted.keyword_text,
            request.candidates,
            request.filters,
        )
    if request.mode in (SearchMode.HYBRID, SearchMode.VECTOR):
        with span("groundwork.leg.vector", **{LEG: "vector"}):
            query_vector = engines.embedder.embed_query(request.query)
            vector_hits = engines.vectors.search(
                scope, query_vector, request.candidates, request.filters
            )
        vector_count = len(vector_hits)
        legs["vector"] = vector_leg(vector_hits, engines.vectors.model.semantic_floor)
        leg_scores["vector"] = first_scores(vector_hits)
    missing: tuple[str, ...] = ()
    if request.mode != SearchMode.VECTOR:
        try:
            # overlapped, or (keyword mode, or every core busy) run here, in turn;
            # stopwords come off the keyword query (never off the index)
            keyword_hits = (
                keyword_leg.result()
                if keyword_leg is not None
                else _keyword_leg(
                    engines.keywords,
                    scope,
                    interpreted.keyword_text,
                    request.candidates,
                    request.filters,
                )
            )
            legs["keyword"] = [h.chunk_id for h in keyword_hits]
            leg_scores["keyword"] = first_scores(keyword_hits)
        except (EngineUnavailable, StoreError):
            if request.mode == SearchMode.KEYWORD:
                raise
            # One engine's trouble (a keyword node down, its circuit breaker
            # refusing under load) is not the whole search's: the vector leg
            # answers and the outcome says which leg is missing.
            missing = ("keyword",)

    if not any(legs.values()):
        if vector_count:
            return NothingCloseEnough()
        if not engines.reader.has_accessible_sources(scope):
            return NothingAccessible()
        return NothingMatches()

    # Re-checked at result time: a source deleted or re-scoped since indexing drops out here.
    scored = recheck_and_rank(
        legs, lambda ids: engines.reader.load_chunks(scope, ids), engines.policy
    )
    if not scored:
        return NothingMatches()
    order = [item[2].chunk_id for item in scored]
    by_source = {item[2].chunk_id: item[2].source_id for item in scored}
    degraded: tuple[str, ...] = ()
    if request.rerank and engines.reranker is not None and engines.reranker.reorders(interpreted):
        order, degraded = _reranked(engines, interpreted, scored, order, leg_scores)
    if request.pinned_source_ids:
        pinned = set(request.pinned_source_ids)
        order = [c for c in order if by_source[c] in pinned] + [
            c for c in order if by_source[c] not in pinned
        ]
    hits = _cited_hits(order[: request.limit], scored, now())
    return Found(hits, missing_legs=missing, degraded=degraded)


def _keyword_leg(
    keywords: KeywordIndex,
    scope: AccessScope,
    text: str,
    candidates: int,
    filters: SearchFilters | None,
) -> list[ScoredChunk]:
    with span("groundwork.leg.keyword", **{LEG: "keyword"}):
        return keywords.search(scope, text, candidates, filters)


def _cited_hits(
    order: Sequence[str],
    scored: Sequence[tuple[float, FusedCandidate, ChunkView]],
    retrieved_at: datetime,
) -> tuple[Hit, ...]:
    """The answer in its final order, each hit with its citation snapshot."""
    by_id = {item[2].chunk_id: item for item in scored}
    hits: list[Hit] = []
    for chunk_id in order:
        score, candidate, view = by_id[chunk_id]
        hits.append(
            Hit(len(hits) + 1, score, candidate.ranks, view, citation_for(view, retrieved_at))
        )
    return tuple(hits)


def vector_leg(hits: Sequence[ScoredChunk], semantic_floor: float) -> list[str]:
    """The vector leg's ranked ids: hits below the model's semantic floor are not
    evidence of relevance, however high they rank."""
    return [h.chunk_id for h in hits if h.score >= semantic_floor]


def rank_candidates(
    legs: Mapping[str, Sequence[str]], views: Mapping[str, ChunkView], policy: RetrievalPolicy
) -> list[tuple[float, FusedCandidate, ChunkView]]:
    """Fusion, low-confidence demotion and the relative floor over the legs' ids
    whose chunks the re-check returned (`views`), best first. The evaluation's
    cross-validation runs this same function over recorded legs."""
    return _floored(_fused(legs, policy), views, policy)


def recheck_and_rank(
    legs: Mapping[str, Sequence[str]],
    load: Callable[[list[str]], Mapping[str, ChunkView]],
    policy: RetrievalPolicy,
) -> list[tuple[float, FusedCandidate, ChunkView]]:
    """`rank_candidates` with the re-check (`load`) asked only for candidates
    that can still be answered: fusion needs ranks alone, so the fused order is
    known before any chunk is read, and a candidate below the relative floor of
    the best survivor never is. The bar starts at the floor of the best fused
    candidate; when the re-check drops or demotes the best, the bar falls to the
    floor of the best that survived and the longer prefix is read again, so the
    answer is the same as reading every candidate (tests/unit/
    test_recheck_prefix.py). Measured on the SciFact bench tenant: 22.8 of 83.7
    candidates read per search (bench/search_profile.py). One nuance: the
    re-check answers one version per source among the ids it is asked, so in a
    publication's grace window a previous version's chunk may be answered where
    a current chunk of that source is a candidate below the bar; each answer is
    still one version per source."""
    fused = _fused(legs, policy)
    if not fused:
        return []
    bar = fused[0].score * policy.relative_floor
    while True:
        end = next((i for i, c in enumerate(fused) if c.score < bar), len(fused))
        prefix = fused[:end]
        scored = _floored(prefix, load([c.chunk_id for c in prefix]), policy)
        if end == len(fused):
            return scored
        if not scored:
            bar = 0.0  # nothing survived: every candidate may be the best
            continue
        bar = scored[0][0] * policy.relative_floor
        if fused[end].score < bar:
            return scored  # nothing unread can reach the floor


def _fused(legs: Mapping[str, Sequence[str]], policy: RetrievalPolicy) -> list[FusedCandidate]:
    return reciprocal_rank_fusion(legs, k=policy.rrf_k, weights=dict(policy.leg_weights))


def _floored(
    fused: Sequence[FusedCandidate], views: Mapping[str, ChunkView], policy: RetrievalPolicy
) -> list[tuple[float, FusedCandidate, ChunkView]]:
    scored = []
    for candidate in fused:
        view = views.get(candidate.chunk_id)
        if view is None:
            continue
        weight = policy.low_confidence_weight if view.low_confidence else 1.0
        scored.append((candidate.score * weight, candidate, view))
    if not scored:
        return []
    scored.sort(key=lambda item: -item[0])
    best = scored[0][0]
    return [item for item in scored if item[0] >= best * policy.relative_floor]


def _reranked(
    engines: SearchEngines,
    interpreted: InterpretedQuery,
    scored: Sequence[tuple[float, FusedCandidate, ChunkView]],
    fused: list[str],
    leg_scores: Mapping[str, Mapping[str, float]],
) -> tuple[list[str], tuple[str, ...]]:
    """The reranker's order, or, when a remote one cannot answer (down, slow, its
    circuit open), the local one's (fusion order without one), and the sentence
    that says so."""
    assert engines.reranker is not None
    try:
        return reranked_order(engines.reranker, interpreted, scored, leg_scores), ()
    except EngineUnavailable as exc:
        degraded = (f"reranker: {exc}; ranked locally instead",)
        if engines.fallback_reranker is None:
            return fused, degraded
        return (
            reranked_order(engines.fallback_reranker, interpreted, scored, leg_scores),
            degraded,
        )


def reranked_order(
    reranker: Reranker,
    interpreted: InterpretedQuery,
    scored: Sequence[tuple[float, FusedCandidate, ChunkView]],
    leg_scores: Mapping[str, Mapping[str, float]] | None = None,
) -> list[str]:
    """The reranker's order over the ranked candidates; a reranker that returns
    nothing (or part) leaves the rest in fusion order."""
    order = [view.chunk_id for _, _, view in scored]
    reranked = reranker.rerank(interpreted, rerank_candidates(scored, leg_scores))
    known = set(order)
    head = [chunk_id for chunk_id in dict.fromkeys(reranked) if chunk_id in known]
    taken = set(head)
    return head + [chunk_id for chunk_id in order if chunk_id not in taken]


def first_scores(hits: Sequence[ScoredChunk]) -> dict[str, float]:
    """Each chunk's score in a leg, at its first (best) place there."""
    scores: dict[str, float] = {}
    for hit in hits:
        scores.setdefault(hit.chunk_id, hit.score)
    return scores


def rerank_candidates(
    scored: Sequence[tuple[float, FusedCandidate, ChunkView]],
    leg_scores: Mapping[str, Mapping[str, float]] | None = None,
) -> list[RerankCandidate]:
    """The candidates as a reranker sees them (the offline training of the
    learned reranker reads them through this same function). The text is read
    as the keyword leg indexed it: a code in the title (heading path) counts.
    `leg_scores`: each leg's own score of its hits (cosine, BM25)."""
    scores = leg_scores or {}
    return [
        RerankCandidate(
            view.chunk_id,
            " > ".join([*view.heading_path, view.body]),
            fused_score=score,
            leg_ranks=tuple(sorted(fused.ranks.items())),
            leg_scores=tuple(
                sorted(
                    (leg, of[view.chunk_id]) for leg, of in scores.items() if view.chunk_id in of
                )
            ),
            source_id=view.source_id,
            heading_path=view.heading_path,
        )
        for score, fused, view in scored
    ]


def citation_for(view: ChunkView, retrieved_at: datetime) -> Citation:
    return Citation(
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
        document_type=view.document_type,
        artifact_id=view.artifact_id,
        source_location=view.source_location,
        corpus=view.corpus,
    )
