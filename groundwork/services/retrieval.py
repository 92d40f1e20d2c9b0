"""Search, browse, budgeted context and summaries: the retrieval operations
every transport offers, written once (drill-down and citation checks, which
accept what these hand out, are `drilldown` and `citation_checks`).

Each call that hands chunk ids or citations to a caller records them here (as
issued to the key, and as citation snapshots), so drill-down and citation
checks accept exactly what was handed out, whichever transport handed it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from groundwork.catalog import Tenant
from groundwork.citations import Citation
from groundwork.errors import InvalidRequest, Refused
from groundwork.ports import SYSTEM_TENANT, Principal, SearchFilters, SystemReading
from groundwork.retrieval.context import ContextSelection, select_context
from groundwork.retrieval.kernel import SearchMode, SearchRequest
from groundwork.retrieval.layers import SEARCH_LAYERS, layered_search
from groundwork.retrieval.outcome import ChunkView, Found, Hit, RetrievalOutcome
from groundwork.retrieval.routing import Route
from groundwork.services import sources, tenant_wall
from groundwork.services.overview import OverviewView, overview_view
from groundwork.services.platform import PlatformPorts
from groundwork.services.turns import issue_turn
from groundwork.summaries import (
    MAX_POINTERS,
    CompiledSummary,
    SourceSummary,
    summarize_sources,
)
from groundwork.tracing import TENANT, span

OUTCOME_MESSAGES = {
    "found": "Results found.",
    "nothing_accessible": "Nothing is visible to this API key; ask an administrator for access.",
    "nothing_matches": "No published passage matches the query; try other words.",
    "nothing_close_enough": "Some passages were related, but none closely enough to cite.",
    "browse": "What exists, by type (an empty or * query browses instead of searching).",
}
#: an empty or `*` query lists what exists instead of searching
BROWSE_QUERIES = frozenset({"", "*"})
CHUNK_ID = re.compile(r"^ch_[0-9a-f]{32}$")
CONTEXT_CANDIDATES = 30
#: candidates per leg for a tenant without its own constants. 20, not 50:
#: replayed over recorded legs with the default constants (evals.fusion_cv),
#: nDCG@10 at 20 against 50 was SciFact 0.7341 / 0.7332 (hybrid; 0.7330 /
#: 0.7323 with the reranker), SQuAD 0.8736 / 0.8712, identifier queries'
#: MRR@10 with the reranker 1.000 / 1.000: with k 5 the relative floor drops a
#: candidate one leg ranks below ~25 anyway. Through `groundwork up` the
#: servers' CPU per search fell 10% (14.79 -> 13.50 ms, bench/README.md).
DEFAULT_DEPTH = 20


@dataclass(frozen=True, slots=True)
class SearchQuery:
    query: str
    limit: int = 10
    mode: str = "hybrid"
    rerank: bool = True
    filters: SearchFilters | None = None
    pinned_source_ids: tuple[str, ...] = ()
    cursor: str | None = None  # browse paging
    #: "raw" (the documents' chunks), "summary" (their compiled summary pages),
    #: "summary_first" (summaries pick the sources, their raw chunks answer) or
    #: "auto" (raw or summary_first, as the router reads the query)
    layer: str = "raw"


@dataclass(frozen=True, slots=True)
class IssuedHit:
    """A hit as handed to a caller: its citation is stored and has an id. A hit
    of the summary layer carries its summary's pointers: the raw chunk ids to
    drill down into (issued to the key with the hit)."""

    citation_id: str
    hit: Hit
    pointers: tuple[str, ...] = ()
    summary_kind: str = ""  # a summary-layer hit: extractive | generative


@dataclass(frozen=True, slots=True)
class BrowsePage:
    counts_by_type: dict[str, int]
    sources: tuple[dict[str, Any], ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class SearchResult:
    outcome: str  # found | nothing_accessible | nothing_matches | nothing_close_enough | browse
    message: str
    model: str
    hits: tuple[IssuedHit, ...] = ()
    browse: BrowsePage | None = None
    turn_id: str = ""  # the drill-down turn for the ids handed out here
    missing_legs: tuple[str, ...] = ()  # legs whose engine failed: the hits come from the rest
    #: parts that ran in a lesser form (a remote reranker down: ranked locally), each a sentence
    degraded: tuple[str, ...] = ()
    #: layer "auto": the layer the router chose for the query and why
    route: Route | None = None


@dataclass(frozen=True, slots=True)
class ContextItem:
    marker: int
    citation_id: str
    hit: Hit
    chunks: tuple[ChunkView, ...]
    expanded: bool
    tokens: int


@dataclass(frozen=True, slots=True)
class ContextResult:
    outcome: str
    message: str
    items: tuple[ContextItem, ...]
    selection: ContextSelection | None
    route: Route | None = None  # layer "auto": the layer the router chose and why


@dataclass(frozen=True, slots=True)
class SummariesResult:
    overview: str
    summaries: tuple[SourceSummary, ...]
    turn_id: str = ""
    #: the compiled overview page as this caller may read it (None before the first)
    page: OverviewView | None = None


def is_browse(query: str) -> bool:
    return query.strip() in BROWSE_QUERIES


def run_search(
    ports: PlatformPorts, who: Principal, query: SearchQuery, tenant: Tenant | None = None
) -> tuple[str, RetrievalOutcome]:
    """`tenant`: the caller's tenant as its authentication read it, this request
    (`TenantDirectory.authenticate`); read here, once, when not given. It names
    the model, the fusion constants and whether the system corpus is read
    (`tenant_wall.reading_scope`, the scope every leg filters by)."""
    if tenant is None:
        tenant = ports.catalog.get_tenant(who.tenant_id)
    elif tenant.tenant_id != who.tenant_id:
        raise ValueError("the tenant given is not the caller's")
    scope = tenant_wall.reading_scope(who, tenant)
    model_key = tenant.active_model if tenant else ports.serving_model(who.tenant_id)
    engines = ports.search_engines(model_key)
    depth = DEFAULT_DEPTH
    if tenant is not None and tenant.fusion is not None and tenant.fusion.serves(model_key):
        engines = replace(engines, policy=tenant.fusion.applied_to(engines.policy))
        depth = tenant.fusion.depth
    if query.layer not in SEARCH_LAYERS:
        raise InvalidRequest(f"layer must be one of {', '.join(SEARCH_LAYERS)}")
    request = SearchRequest(
        query=query.query,
        limit=query.limit,
        candidates=max(depth, query.limit),
        mode=SearchMode(query.mode),
        filters=query.filters,
        rerank=query.rerank,
        pinned_source_ids=query.pinned_source_ids,
    )
    return model_key, layered_search(scope, request, engines, query.layer)


def issue(
    ports: PlatformPorts, who: Principal, citations: list[Citation], chunk_ids: list[str]
) -> list[str]:
    """Citations are stored as snapshots and the chunk ids recorded as issued to
    this key, so later drill-down accepts exactly these ids. A cited system
    corpus passage is stored as the caller's citation (its tenant's row)."""
    scope = replace(who.scope, system=_system_reading(citations))
    return ports.catalog.record_citations(scope, who.key_id, citations, chunk_ids)


def _system_reading(citations: list[Citation]) -> SystemReading | None:
    """The citations were made from what the legs read under the caller's
    reading scope; a system corpus one needs its owner joined when stored."""
    if any(c.corpus == "system" for c in citations):
        return SystemReading(SYSTEM_TENANT, (tenant_wall.SYSTEM_READERS,))
    return None


def search(
    ports: PlatformPorts, who: Principal, query: SearchQuery, tenant: Tenant | None = None
) -> SearchResult:
    with (
        span("groundwork.service.search", **{TENANT: who.tenant_id, "groundwork.mode": query.mode}),
        ports.shared_transaction(),
    ):
        return _search(ports, who, query, tenant)


def _search(
    ports: PlatformPorts, who: Principal, query: SearchQuery, tenant: Tenant | None
) -> SearchResult:
    if is_browse(query.query):
        media_type = (
            query.filters.media_types[0] if query.filters and query.filters.media_types else None
        )
        return SearchResult(
            outcome="browse",
            message=OUTCOME_MESSAGES["browse"],
            model=ports.serving_model(who.tenant_id),
            browse=browse(ports, who, media_type, query.cursor, query.limit),
            turn_id=issue_turn(ports.approval_secret(), who.key_id),
        )
    model_key, outcome = run_search(ports, who, query, tenant)
    hits: tuple[IssuedHit, ...] = ()
    if isinstance(outcome, Found):
        compiled = _summaries_of(ports, who, outcome.hits)
        pointers = {
            h.chunk.chunk_id: compiled[h.chunk.source_id].pointers
            for h in outcome.hits
            if h.chunk.source_id in compiled
        }
        ids = issue(
            ports,
            who,
            [h.citation for h in outcome.hits],
            [h.chunk.chunk_id for h in outcome.hits] + [p for ps in pointers.values() for p in ps],
        )
        hits = tuple(
            IssuedHit(
                cid,
                hit,
                pointers.get(hit.chunk.chunk_id, ()),
                compiled[hit.chunk.source_id].kind if hit.chunk.chunk_id in pointers else "",
            )
            for cid, hit in zip(ids, outcome.hits, strict=True)
        )
    missing = outcome.missing_legs if isinstance(outcome, Found) else ()
    degraded = outcome.degraded if isinstance(outcome, Found) else ()
    message = OUTCOME_MESSAGES[outcome.kind]
    if missing:
        message += f" ({' and '.join(missing)} search was unavailable: these results come from the other leg alone)"
    return SearchResult(
        outcome.kind,
        message,
        model_key,
        hits,
        turn_id=issue_turn(ports.approval_secret(), who.key_id),
        missing_legs=missing,
        degraded=degraded,
        route=outcome.route if isinstance(outcome, Found) else None,
    )


def _summaries_of(
    ports: PlatformPorts, who: Principal, hits: tuple[Hit, ...]
) -> dict[str, CompiledSummary]:
    """The compiled summaries behind the summary-layer hits (none for raw hits)."""
    sources = list(dict.fromkeys(h.chunk.source_id for h in hits if h.chunk.layer == "summary"))
    return ports.catalog.compiled_summaries(who.scope, sources) if sources else {}


def browse(
    ports: PlatformPorts, who: Principal, media_type: str | None, cursor: str | None, limit: int
) -> BrowsePage:
    rows = ports.catalog.browse(who.scope, media_type, cursor, limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    return BrowsePage(
        counts_by_type=ports.catalog.media_type_counts(who.scope),
        sources=tuple(rows),
        next_cursor=rows[-1]["source_id"] if more and rows else None,
    )


def context(
    ports: PlatformPorts,
    who: Principal,
    query: SearchQuery,
    budget_tokens: int,
    per_source_cap: int,
    expand_sections: bool,
    tenant: Tenant | None = None,
) -> ContextResult:
    with ports.shared_transaction():
        model_key, outcome = run_search(
            ports,
            who,
            SearchQuery(
                query.query,
                CONTEXT_CANDIDATES,
                query.mode,
                query.rerank,
                query.filters,
                layer=query.layer,
            ),
            tenant,
        )
        if not isinstance(outcome, Found):
            return ContextResult(outcome.kind, OUTCOME_MESSAGES[outcome.kind], (), None)
        engines = ports.search_engines(model_key)
        scope = tenant_wall.reading_scope(who, tenant or ports.catalog.get_tenant(who.tenant_id))
        selection = select_context(
            outcome.hits,
            budget_tokens=budget_tokens,
            count_tokens=ports.embedder(model_key).count_tokens,
            per_source_cap=per_source_cap,
            load_section=(lambda view: engines.reader.section(scope, view.chunk_id))
            if expand_sections
            else None,
        )
        chunk_ids = [c.chunk_id for item in selection.items for c in item.chunks]
        ids = issue(ports, who, [item.hit.citation for item in selection.items], chunk_ids)
        items = tuple(
            ContextItem(marker, cid, item.hit, tuple(item.chunks), item.expanded, item.tokens)
            for marker, (cid, item) in enumerate(zip(ids, selection.items, strict=True), start=1)
        )
        return ContextResult("found", OUTCOME_MESSAGES["found"], items, selection, outcome.route)


def summaries(ports: PlatformPorts, who: Principal, query: str, limit: int) -> SummariesResult:
    """The token-efficient first layer: a summary per source with pointers to raw chunks."""
    counts = ports.catalog.media_type_counts(who.scope)
    overview = (
        f"{sum(counts.values())} sources: " + ", ".join(f"{n} {t}" for t, n in counts.items())
        if counts
        else "No sources are visible to this key."
    )
    hits_by_source: dict[str, list[ChunkView]] = {}
    ordered: list[str] = []
    if not is_browse(query):
        _, outcome = run_search(ports, who, SearchQuery(query, CONTEXT_CANDIDATES))
        if isinstance(outcome, Found):
            for hit in outcome.hits:
                if hit.chunk.source_id not in hits_by_source:
                    ordered.append(hit.chunk.source_id)
                hits_by_source.setdefault(hit.chunk.source_id, []).append(hit.chunk)
    else:
        ordered = [r["source_id"] for r in ports.catalog.browse(who.scope, None, None, limit)]
    ordered = ordered[:limit]
    found = source_summaries(ports, who, ordered, hits_by_source)
    page = overview_view(ports, who, sum(counts.values()))
    ports.catalog.record_issued(
        who.key_id, [p for s in found for p in s.pointers] + (page.chunk_ids if page else [])
    )
    return SummariesResult(
        overview, tuple(found), turn_id=issue_turn(ports.approval_secret(), who.key_id), page=page
    )


def source_summaries(
    ports: PlatformPorts,
    who: Principal,
    ordered: list[str],
    hits_by_source: dict[str, list[ChunkView]],
) -> list[SourceSummary]:
    """Each source's compiled summary (the page compiled at ingest for the
    version it publishes), its pointers led by the chunks the query matched;
    a source without one (published before the summary layer, or not yet
    recompiled) is summarized at query time as before, from its lead chunks."""
    compiled = ports.catalog.compiled_summaries(who.scope, ordered)
    missing = [s for s in ordered if s not in compiled]
    lead = ports.catalog.first_chunks(who.scope, missing) if missing else {}
    at_query_time = {
        s.source_id: s for s in summarize_sources(missing, hits_by_source, lead, ports.summarizer())
    }
    found: list[SourceSummary] = []
    for source_id in ordered:
        page = compiled.get(source_id)
        if page is None:
            if source_id in at_query_time:
                found.append(at_query_time[source_id])
            continue
        matched = [c.chunk_id for c in hits_by_source.get(source_id, [])]
        found.append(
            SourceSummary(
                source_id=source_id,
                title=page.title,
                media_type=page.media_type,
                summary=page.text,
                kind=page.kind,
                pointers=tuple(dict.fromkeys([*matched, *page.pointers]))[:MAX_POINTERS],
                version_id=page.version_id,
                model=page.model,
                compiled=True,
                stale=page.stale,
            )
        )
    return found


def summarize_one(ports: PlatformPorts, who: Principal, source_id: str) -> SourceSummary | None:
    found = source_summaries(ports, who, [source_id], {})
    if not found:
        return None
    ports.catalog.record_issued(who.key_id, list(found[0].pointers))
    return found[0]


def summarize_file(ports: PlatformPorts, who: Principal, source_id: str) -> SourceSummary:
    """`summarize_one` for a source the caller can see. Refusals: `not_found`,
    `not_ready` (no text yet)."""
    sources.current_version(ports, who, source_id)
    summary = summarize_one(ports, who, source_id)
    if summary is None:
        raise Refused(
            f"{source_id} has no text yet", "call get_file_processing_status", code="not_ready"
        )
    return summary
