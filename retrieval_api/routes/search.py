"""Search, budgeted context, summaries: the retrieval surfaces."""

from typing import Annotated

from fastapi import APIRouter, Query

from groundwork.citations import Citation
from groundwork.ports import Principal, SearchFilters
from groundwork.reading import fence_untrusted
from groundwork.retrieval.context import select_context
from groundwork.retrieval.kernel import SearchMode, SearchRequest, hybrid_search
from groundwork.retrieval.outcome import ChunkView, Found, RetrievalOutcome
from groundwork.summaries import summarize_sources
from resources.llm import configured_summarizer
from resources.platform import Platform
from retrieval_api.deps import PlatformDep, PrincipalDep
from retrieval_api.schemas import (
    BrowseOut,
    CitationOut,
    ContextBody,
    ContextItemOut,
    ContextOut,
    Filters,
    HitOut,
    SearchBody,
    SearchResponse,
    SourceListing,
    SummariesOut,
    SummaryOut,
)

router = APIRouter()

OUTCOME_MESSAGES = {
    "found": "Results found.",
    "nothing_accessible": "Nothing is visible to this API key; ask an administrator for access.",
    "nothing_matches": "No published passage matches the query; try other words.",
    "nothing_close_enough": "Some passages were related, but none closely enough to cite.",
    "browse": "What exists, by type (an empty or * query browses instead of searching).",
}
BROWSE_QUERIES = {"", "*"}


def to_filters(body: Filters | None) -> SearchFilters | None:
    if body is None:
        return None
    return SearchFilters(
        source_ids=tuple(body.source_ids) if body.source_ids is not None else None,
        media_types=tuple(body.media_types) if body.media_types is not None else None,
        tags=tuple(body.tags) if body.tags is not None else None,
        date_from=body.date_from,
        date_to=body.date_to,
    )


def serving_model(platform: Platform, tenant_id: str) -> str:
    tenant = platform.catalog.get_tenant(tenant_id)
    return tenant.active_model if tenant else platform.settings.default_model_key


def citation_out(citation: Citation) -> CitationOut:
    return CitationOut(**citation.to_dict())  # type: ignore[arg-type]


def _search(
    platform: Platform,
    who: Principal,
    query: str,
    limit: int,
    mode: str,
    rerank: bool,
    filters: Filters | None,
) -> tuple[str, RetrievalOutcome]:
    model_key = serving_model(platform, who.tenant_id)
    request = SearchRequest(
        query=query,
        limit=limit,
        candidates=max(50, limit),
        mode=SearchMode(mode),
        filters=to_filters(filters),
        rerank=rerank,
        pinned_source_ids=tuple(filters.pinned_source_ids or ()) if filters else (),
    )
    return model_key, hybrid_search(who.scope, request, platform.search_engines(model_key))


def _issue(
    platform: Platform, who: Principal, citations: list[Citation], chunk_ids: list[str]
) -> list[str]:
    """Citations are stored as snapshots and the chunk ids recorded as issued to
    this key, so later drill-down accepts exactly these ids."""
    platform.catalog.record_issued(who.key_id, chunk_ids)
    return platform.catalog.record_citations(who.scope, who.key_id, citations)


@router.post("/v1/search", response_model=SearchResponse)
def search(body: SearchBody, who: PrincipalDep, platform: PlatformDep) -> SearchResponse:
    if body.query.strip() in BROWSE_QUERIES:
        return SearchResponse(
            outcome="browse",
            message=OUTCOME_MESSAGES["browse"],
            model=serving_model(platform, who.tenant_id),
            browse=browse(platform, who, body.filters, body.cursor, body.limit),
        )
    model_key, outcome = _search(
        platform, who, body.query, body.limit, body.mode, body.rerank, body.filters
    )
    hits: list[HitOut] = []
    if isinstance(outcome, Found):
        ids = _issue(
            platform,
            who,
            [h.citation for h in outcome.hits],
            [h.chunk.chunk_id for h in outcome.hits],
        )
        for citation_id, hit in zip(ids, outcome.hits, strict=True):
            hits.append(
                HitOut(
                    citation_id=citation_id,
                    rank=hit.rank,
                    score=hit.score,
                    leg_ranks=hit.leg_ranks,
                    chunk_id=hit.chunk.chunk_id,
                    source_id=hit.chunk.source_id,
                    title=hit.chunk.title,
                    filename=hit.chunk.filename,
                    media_type=hit.chunk.media_type,
                    heading_path=list(hit.chunk.heading_path),
                    text=hit.chunk.body,
                    citation=citation_out(hit.citation),
                )
            )
    return SearchResponse(
        outcome=outcome.kind,  # type: ignore[arg-type]
        message=OUTCOME_MESSAGES[outcome.kind],
        model=model_key,
        hits=hits,
    )


def browse(
    platform: Platform, who: Principal, filters: Filters | None, cursor: str | None, limit: int
) -> BrowseOut:
    media_type = filters.media_types[0] if filters and filters.media_types else None
    rows = platform.catalog.browse(who.scope, media_type, cursor, limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    return BrowseOut(
        counts_by_type=platform.catalog.media_type_counts(who.scope),
        sources=[
            SourceListing(
                source_id=r["source_id"],
                title=r["title"],
                filename=r["filename"],
                media_type=r["media_type"],
                processing_state=r["processing_state"],
                low_confidence=r["low_confidence"],
            )
            for r in rows
        ],
        next_cursor=rows[-1]["source_id"] if more and rows else None,
    )


@router.post("/v1/context", response_model=ContextOut)
def context(body: ContextBody, who: PrincipalDep, platform: PlatformDep) -> ContextOut:
    """Budgeted, citation-ready context for a model, fenced as untrusted data."""
    model_key, outcome = _search(
        platform, who, body.query, 30, body.mode, body.rerank, body.filters
    )
    if not isinstance(outcome, Found):
        return ContextOut(
            outcome=outcome.kind,  # type: ignore[arg-type]
            message=OUTCOME_MESSAGES[outcome.kind],
            context="",
            items=[],
            used_tokens=0,
            budget_tokens=body.budget_tokens,
            skipped_for_budget=0,
            skipped_for_source_cap=0,
            skipped_as_duplicate=0,
        )
    embedder = platform.embedder(model_key)
    selection = select_context(
        outcome.hits,
        budget_tokens=body.budget_tokens,
        count_tokens=embedder.count_tokens,
        per_source_cap=body.per_source_cap,
        load_section=(lambda view: platform.catalog.section(who.scope, view.chunk_id))
        if body.expand_sections
        else None,
    )
    chunk_ids = [c.chunk_id for item in selection.items for c in item.chunks]
    ids = _issue(platform, who, [item.hit.citation for item in selection.items], chunk_ids)
    parts: list[str] = []
    items: list[ContextItemOut] = []
    for marker, (citation_id, item) in enumerate(zip(ids, selection.items, strict=True), start=1):
        citation = item.hit.citation
        text = "\n\n".join(c.body for c in item.chunks)
        header = f"[{marker}] {citation.title} ({citation.location.label()})"
        parts.append(f"{header}\n{fence_untrusted(text, citation.source_id)}")
        items.append(
            ContextItemOut(
                marker=marker,
                citation_id=citation_id,
                chunk_ids=[c.chunk_id for c in item.chunks],
                expanded=item.expanded,
                tokens=item.tokens,
                citation=citation_out(citation),
            )
        )
    return ContextOut(
        outcome="found",
        message=OUTCOME_MESSAGES["found"],
        context="\n\n".join(parts),
        items=items,
        used_tokens=selection.used_tokens,
        budget_tokens=selection.budget_tokens,
        skipped_for_budget=selection.skipped_for_budget,
        skipped_for_source_cap=selection.skipped_for_source_cap,
        skipped_as_duplicate=selection.skipped_as_duplicate,
    )


@router.get("/v1/summaries", response_model=SummariesOut)
def summaries(
    who: PrincipalDep,
    platform: PlatformDep,
    query: Annotated[str, Query(max_length=2000)] = "",
    limit: Annotated[int, Query(ge=1, le=50)] = 10,
) -> SummariesOut:
    """The token-efficient first layer: a summary per source with pointers to raw chunks."""
    counts = platform.catalog.media_type_counts(who.scope)
    overview = (
        f"{sum(counts.values())} sources: " + ", ".join(f"{n} {t}" for t, n in counts.items())
        if counts
        else "No sources are visible to this key."
    )
    hits_by_source: dict[str, list[ChunkView]] = {}
    ordered: list[str] = []
    if query.strip() and query.strip() not in BROWSE_QUERIES:
        _, outcome = _search(platform, who, query, 30, "hybrid", True, None)
        if isinstance(outcome, Found):
            for hit in outcome.hits:
                if hit.chunk.source_id not in hits_by_source:
                    ordered.append(hit.chunk.source_id)
                hits_by_source.setdefault(hit.chunk.source_id, []).append(hit.chunk)
    else:
        ordered = [r["source_id"] for r in platform.catalog.browse(who.scope, None, None, limit)]
    ordered = ordered[:limit]
    lead = platform.catalog.first_chunks(who.scope, ordered)
    found = summarize_sources(ordered, hits_by_source, lead, configured_summarizer())
    platform.catalog.record_issued(who.key_id, [p for s in found for p in s.pointers])
    return SummariesOut(
        overview=overview,
        summaries=[
            SummaryOut(
                source_id=s.source_id,
                title=s.title,
                media_type=s.media_type,
                summary=s.summary,
                kind=s.kind,  # type: ignore[arg-type]
                pointers=list(s.pointers),
            )
            for s in found
        ],
    )
