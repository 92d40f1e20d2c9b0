"""Search, budgeted context, summaries: the retrieval surfaces (mappings to
groundwork.services.retrieval)."""

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel

from groundwork.ports import SearchFilters
from groundwork.reading import fence_untrusted
from groundwork.retrieval.context import render_context_entry
from groundwork.retrieval.routing import Route
from groundwork.services import attachments, retrieval
from groundwork.services.retrieval import BrowsePage, IssuedHit, SearchQuery
from retrieval_api.deps import PlatformDep, PrincipalDep
from retrieval_api.schemas import (
    BrowseOut,
    ContextBody,
    ContextItemOut,
    ContextOut,
    Filters,
    HitOut,
    OverviewPageOut,
    RouteOut,
    SearchBody,
    SearchResponse,
    SourceListing,
    SummariesOut,
    SummaryOut,
    citation_out,
    file_references_out,
)
from retrieval_api.scopes import authorize_in_handler_thread
from retrieval_api.threads import Caller, in_one_thread

router = APIRouter()


def model_response(model: BaseModel) -> Response:
    """The model serialized once, here. Returned as a Response, FastAPI skips its
    own pass over the return value (validating it against `response_model` again,
    then `jsonable_encoder`): ~0.47 ms against 0.03 ms for `model_dump_json` on a
    10-hit search (measured in process). `response_model` still documents it."""
    return Response(content=model.model_dump_json(), media_type="application/json")


def to_filters(body: Filters | None) -> SearchFilters | None:
    if body is None:
        return None
    return SearchFilters(
        source_ids=tuple(body.source_ids) if body.source_ids is not None else None,
        media_types=tuple(body.media_types) if body.media_types is not None else None,
        tags=tuple(body.tags) if body.tags is not None else None,
        date_from=body.date_from,
        date_to=body.date_to,
        document_types=tuple(body.document_types) if body.document_types is not None else None,
    )


def hit_out(issued: IssuedHit) -> HitOut:
    hit = issued.hit
    return HitOut(
        citation_id=issued.citation_id,
        rank=hit.rank,
        score=hit.score,
        leg_ranks=hit.leg_ranks,
        chunk_id=hit.chunk.chunk_id,
        source_id=hit.chunk.source_id,
        title=hit.chunk.title,
        filename=hit.chunk.filename,
        media_type=hit.chunk.media_type,
        heading_path=list(hit.chunk.heading_path),
        untrusted_text=fence_untrusted(hit.chunk.body, hit.chunk.source_id),
        citation=citation_out(hit.citation),
        layer=hit.chunk.layer,  # type: ignore[arg-type]
        pointers=list(issued.pointers),
        summary_kind=issued.summary_kind,  # type: ignore[arg-type]
        corpus=hit.chunk.corpus,  # type: ignore[arg-type]
    )


def browse_out(page: BrowsePage) -> BrowseOut:
    return BrowseOut(
        counts_by_type=page.counts_by_type,
        sources=[
            SourceListing(
                source_id=r["source_id"],
                title=r["title"],
                filename=r["filename"],
                media_type=r["media_type"],
                processing_state=r["processing_state"],
                low_confidence=r["low_confidence"],
            )
            for r in page.sources
        ],
        next_cursor=page.next_cursor,
    )


def route_out(route: Route | None) -> RouteOut | None:
    return RouteOut(layer=route.layer, reason=route.reason) if route is not None else None


@router.post("/v1/search", response_model=SearchResponse)
@authorize_in_handler_thread
async def search(body: SearchBody, request: Request) -> Response:
    return await in_one_thread(request, lambda caller: _search(body, caller))


def _search(body: SearchBody, caller: Caller) -> Response:
    result = retrieval.search(
        caller.platform,
        caller.who,
        SearchQuery(
            query=body.query,
            limit=body.limit,
            mode=body.mode,
            rerank=body.rerank,
            filters=to_filters(body.filters),
            pinned_source_ids=tuple(body.filters.pinned_source_ids or ()) if body.filters else (),
            cursor=body.cursor,
            layer=body.layer,
        ),
        caller.tenant,
    )
    return model_response(
        SearchResponse(
            outcome=result.outcome,  # type: ignore[arg-type]
            message=result.message,
            model=result.model,
            hits=[hit_out(h) for h in result.hits],
            browse=browse_out(result.browse) if result.browse is not None else None,
            turn_id=result.turn_id,
            missing_legs=list(result.missing_legs),
            degraded=list(result.degraded),
            route=route_out(result.route),
        )
    )


@router.post("/v1/context", response_model=ContextOut)
@authorize_in_handler_thread
async def context(body: ContextBody, request: Request) -> Response:
    """Budgeted, citation-ready context for a model, fenced as untrusted data."""
    return await in_one_thread(request, lambda caller: _context(body, caller))


def _context(body: ContextBody, caller: Caller) -> Response:
    result, files = attachments.context_with_files(
        caller.platform,
        caller.who,
        SearchQuery(
            body.query,
            mode=body.mode,
            rerank=body.rerank,
            filters=to_filters(body.filters),
            layer=body.layer,
        ),
        budget_tokens=body.budget_tokens,
        per_source_cap=body.per_source_cap,
        expand_sections=body.expand_sections,
        tenant=caller.tenant,
    )
    selection = result.selection
    parts: list[str] = []
    for item in result.items:
        parts.append(render_context_entry(item.marker, item.hit, item.chunks))
    return model_response(
        ContextOut(
            outcome=result.outcome,  # type: ignore[arg-type]
            message=result.message,
            untrusted_context="\n\n".join(parts),
            items=[
                ContextItemOut(
                    marker=item.marker,
                    citation_id=item.citation_id,
                    chunk_ids=[c.chunk_id for c in item.chunks],
                    expanded=item.expanded,
                    tokens=item.tokens,
                    citation=citation_out(item.hit.citation),
                )
                for item in result.items
            ],
            used_tokens=selection.used_tokens if selection else 0,
            budget_tokens=selection.budget_tokens if selection else body.budget_tokens,
            skipped_for_budget=selection.skipped_for_budget if selection else 0,
            skipped_for_source_cap=selection.skipped_for_source_cap if selection else 0,
            skipped_as_duplicate=selection.skipped_as_duplicate if selection else 0,
            **file_references_out(files),
            route=route_out(result.route),
        )
    )


@router.get("/v1/summaries", response_model=SummariesOut)
def summaries(
    who: PrincipalDep,
    platform: PlatformDep,
    query: Annotated[str, Query(max_length=2000)] = "",
    limit: Annotated[int, Query(ge=1, le=50)] = 10,
) -> SummariesOut:
    """The token-efficient first layer: a summary per source with pointers to raw chunks."""
    result, files = attachments.summaries_with_files(platform, who, query, limit)
    return SummariesOut(
        overview=result.overview,
        overview_page=OverviewPageOut.model_validate(result.page.presented())
        if result.page
        else None,
        summaries=[
            SummaryOut(
                source_id=s.source_id,
                title=s.title,
                media_type=s.media_type,
                untrusted_summary=fence_untrusted(s.summary, s.source_id),
                kind=s.kind,  # type: ignore[arg-type]
                pointers=list(s.pointers),
                compiled=s.compiled,
                version_id=s.version_id,
                model=s.model,
                stale=s.stale,
            )
            for s in result.summaries
        ],
        turn_id=result.turn_id,
        **file_references_out(files),
    )
