"""Searching by layer: the documents' own chunks (raw, the default), their
compiled summary pages (summary), or the summary layer first, expanded into
the raw chunks of the sources it found (summary_first).

auto routes each query to one of raw and summary_first by its wording
(routing.py) and the outcome says which it took and why.

summary_first is the hierarchical read an agent does by hand: find the
documents whose summary matches, then the passages inside them. The summary
layer picks the top sources; a raw search restricted to those sources ranks
their chunks; each chunk's place fuses its own raw rank with its source's
summary rank by reciprocal rank (the same k as the legs), so a passage of the
best-summarized source does not lose to a slightly better passage of a source
the summaries ranked far below. A source whose raw chunks nothing matched
adds nothing: a summary is a pointer, never evidence itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Literal

from groundwork.errors import InvalidRequest
from groundwork.ports import AccessScope, Layer, SearchFilters
from groundwork.retrieval.kernel import MAX_LIMIT, SearchEngines, SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found, Hit, RetrievalOutcome
from groundwork.retrieval.routing import route_query

SearchLayer = Literal["raw", "summary", "summary_first", "auto"]
SEARCH_LAYERS: tuple[SearchLayer, ...] = ("raw", "summary", "summary_first", "auto")
#: Sources the summary layer hands to the raw layer: the first page of sources,
#: so summary_first answers from the documents a reader of the summaries sees.
SUMMARY_FIRST_SOURCES = 10


def with_layer(filters: SearchFilters | None, layer: Layer) -> SearchFilters:
    return replace(filters or SearchFilters(), layer=layer)


def layered_search(
    scope: AccessScope,
    request: SearchRequest,
    engines: SearchEngines,
    layer: str = "raw",
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    sources: int = SUMMARY_FIRST_SOURCES,
) -> RetrievalOutcome:
    """The request over one layer, or the summary layer first then the raw, or
    (auto) whichever of those two the router picks for the query."""
    if layer == "auto":
        route = route_query(request.query)
        outcome = layered_search(scope, request, engines, route.layer, now, sources)
        return replace(outcome, route=route) if isinstance(outcome, Found) else outcome
    if layer == "raw" or layer == "summary":
        one: Layer = "raw" if layer == "raw" else "summary"
        return hybrid_search(
            scope, replace(request, filters=with_layer(request.filters, one)), engines, now
        )
    if layer != "summary_first":
        raise InvalidRequest(f"layer must be one of {', '.join(SEARCH_LAYERS)}, not {layer!r}")
    return summary_first(scope, request, engines, now, sources)


def summary_first(
    scope: AccessScope,
    request: SearchRequest,
    engines: SearchEngines,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    sources: int = SUMMARY_FIRST_SOURCES,
) -> RetrievalOutcome:
    request = request.validated()
    found = hybrid_search(
        scope,
        replace(
            request,
            limit=min(MAX_LIMIT, request.candidates, sources * 3),
            filters=with_layer(request.filters, "summary"),
            # summaries choose sources; the reranker orders passages, in the raw search
            rerank=False,
        ),
        engines,
        now,
    )
    if not isinstance(found, Found):
        # nothing summarized matches (or nothing is summarized yet): the raw layer answers
        return layered_search(scope, request, engines, "raw", now)
    summary_rank: dict[str, int] = {}
    for hit in found.hits:
        if len(summary_rank) < sources and hit.chunk.source_id not in summary_rank:
            summary_rank[hit.chunk.source_id] = len(summary_rank) + 1
    wanted = tuple(summary_rank)
    if request.filters and request.filters.source_ids is not None:
        allowed = set(request.filters.source_ids)
        wanted = tuple(s for s in wanted if s in allowed)
    raw_filters = replace(with_layer(request.filters, "raw"), source_ids=wanted)
    expanded = hybrid_search(
        scope,
        replace(request, limit=min(MAX_LIMIT, request.candidates), filters=raw_filters),
        engines,
        now,
    )
    if not isinstance(expanded, Found):
        return expanded
    k = engines.policy.rrf_k
    pinned = set(request.pinned_source_ids)
    scored = sorted(
        (
            (1.0 / (k + summary_rank[hit.chunk.source_id]) + 1.0 / (k + hit.rank), hit)
            for hit in expanded.hits
        ),
        # pinned sources still go first, as in a raw search
        key=lambda item: (item[1].chunk.source_id not in pinned, -item[0], item[1].rank),
    )
    hits = tuple(
        Hit(
            rank=n,
            score=score,
            leg_ranks={**hit.leg_ranks, "summary": summary_rank[hit.chunk.source_id]},
            chunk=hit.chunk,
            citation=hit.citation,
        )
        for n, (score, hit) in enumerate(scored[: request.limit], start=1)
    )
    return Found(hits)
