"""Drill-down to raw chunks (verbatim ids only) and citation verification:
mappings to groundwork.services.retrieval."""

from typing import Annotated

from fastapi import APIRouter, Query, Request

from groundwork.reading import fence_untrusted
from groundwork.retrieval.outcome import ChunkView
from groundwork.services import citation_checks, drilldown
from groundwork.services.citation_checks import CitationCheck
from retrieval_api.deps import PlatformDep, PrincipalDep, tool_dispatcher
from retrieval_api.schemas import (
    ChunkOut,
    CitationCheckOut,
    CitationsResolveBody,
    CitationsResolveOut,
    citation_out,
)

router = APIRouter()


@router.get("/v1/chunks/{chunk_id}", response_model=ChunkOut)
def get_chunk(
    chunk_id: str,
    request: Request,
    who: PrincipalDep,
    platform: PlatformDep,
    turn: Annotated[str | None, Query(max_length=400)] = None,
) -> ChunkOut:
    """Raw chunk text, only for ids this key was handed by a previous response
    (copied verbatim); anything else is an error naming the valid ids. Capped
    per turn like the get_chunks tool (the same count): pass the `turn_id` of
    the search or summaries response that handed out the id."""
    ledger = tool_dispatcher(request).turns
    return chunk_out(drilldown.read_chunk(platform, ledger, who, chunk_id, turn))


def chunk_out(view: ChunkView) -> ChunkOut:
    return ChunkOut(
        chunk_id=view.chunk_id,
        source_id=view.source_id,
        version_id=view.version_id,
        title=view.title,
        heading_path=list(view.heading_path),
        location=view.location.to_dict(),
        location_label=view.location.label(),
        low_confidence=view.low_confidence,
        untrusted_content=fence_untrusted(view.body, view.source_id),
        parent_id=view.parent_id,
    )


def _check_out(checked: CitationCheck) -> CitationCheckOut:
    return CitationCheckOut(
        citation_id=checked.citation_id,
        status=checked.status,
        citation=citation_out(checked.citation) if checked.citation is not None else None,
    )


@router.get("/v1/citations/{citation_id}", response_model=CitationCheckOut)
def get_citation(citation_id: str, who: PrincipalDep, platform: PlatformDep) -> CitationCheckOut:
    """Resolve a stored citation (a snapshot: it survives deletion of its source)
    and verify it against the live corpus: exists, drifted, removed or withheld."""
    return _check_out(citation_checks.citation(platform, who, citation_id))


@router.post("/v1/citations/resolve", response_model=CitationsResolveOut)
def resolve_citations(
    body: CitationsResolveBody, who: PrincipalDep, platform: PlatformDep
) -> CitationsResolveOut:
    resolved = citation_checks.resolve_citations(platform, who, body.citation_ids)
    return CitationsResolveOut(
        citations=[_check_out(c) for c in resolved.citations],
        withheld=resolved.withheld,
        unknown=list(resolved.unknown),
    )
