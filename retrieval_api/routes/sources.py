"""Sources: registration over HTTP, processing status, reading windows,
tables, deletion, permissions and tags. Each route maps to one call of
groundwork.services.sources (or the registration service)."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from groundwork.reading import MAX_WINDOW_BLOCKS, NothingToRead, fence_untrusted
from groundwork.services import sources
from groundwork.services.registration import register_stream
from retrieval_api.body import blocking_parts, declared_length
from retrieval_api.deps import PlatformDep, PrincipalDep
from retrieval_api.schemas import (
    BlockOut,
    LifecycleOut,
    ReadOut,
    RegistrationOut,
    SubjectsBody,
    TableOut,
    TablesOut,
    TagsBody,
    VersionStatusOut,
)

router = APIRouter()


@router.post("/v1/sources", response_model=RegistrationOut, status_code=201)
async def register_source(
    request: Request,
    who: PrincipalDep,
    platform: PlatformDep,
    filename: Annotated[str, Query(min_length=1, max_length=255)],
    subjects: Annotated[list[str] | None, Query(max_length=50)] = None,
    replace_existing: bool = False,
) -> RegistrationOut:
    """One-shot registration of a small file (the body is the file). The same
    policy as upload sessions: exact type allow-list, sniffed content, scan,
    and approval to replace a source's content. Larger files and resumable
    transfers go through /v1/uploads."""
    registered = await run_in_threadpool(
        register_stream,
        platform,
        who,
        filename,
        declared_length(request),
        blocking_parts(request),
        subjects=subjects,
        replace_existing=replace_existing,
    )
    return RegistrationOut.model_validate(registered, from_attributes=True)


@router.get("/v1/sources/{source_id}/status", response_model=VersionStatusOut)
def source_status(source_id: str, who: PrincipalDep, platform: PlatformDep) -> VersionStatusOut:
    # the service's value has the response's fields, by name
    return VersionStatusOut.model_validate(
        sources.status(platform, who, source_id), from_attributes=True
    )


@router.get("/v1/sources/{source_id}/read", response_model=ReadOut)
def read_source(
    source_id: str,
    who: PrincipalDep,
    platform: PlatformDep,
    start_block: Annotated[int, Query(ge=0)] = 0,
    max_blocks: Annotated[int, Query(ge=1, le=MAX_WINDOW_BLOCKS)] = MAX_WINDOW_BLOCKS,
    version: Annotated[
        int | None, Query(ge=1, description="a version number; default current")
    ] = None,
) -> ReadOut:
    reading = sources.read(
        platform, who, source_id, start_block=start_block, max_blocks=max_blocks, version=version
    )
    result = reading.result
    if isinstance(result, NothingToRead):
        return ReadOut(
            source_id=source_id,
            version_id=reading.version_id,
            outcome="nothing_to_read",
            reason=result.reason,
            guidance=result.guidance,
            retry_may_help=result.retry_may_help,
        )
    return ReadOut(
        source_id=source_id,
        version_id=reading.version_id,
        outcome="window",
        start_block=result.start_block,
        next_block=result.next_block,
        total_blocks=result.total_blocks,
        low_confidence=result.low_confidence,
        oversized_table=result.oversized_table,
        warnings=list(result.warnings),
        blocks=[
            BlockOut(
                index=result.start_block + i,
                kind=b.kind.value,
                untrusted_text=b.text,
                level=b.level,
                location=b.location.to_dict(),
                location_label=b.location.label(),
                confidence=b.confidence,
                untrusted_table=[list(r) for r in b.table.rows] if b.table else None,
            )
            for i, b in enumerate(result.blocks)
        ],
        untrusted_content=fence_untrusted(result.markdown(), source_id),
    )


@router.get("/v1/sources/{source_id}/tables", response_model=TablesOut)
def source_tables(source_id: str, who: PrincipalDep, platform: PlatformDep) -> TablesOut:
    found = sources.tables(platform, who, source_id)
    return TablesOut(
        source_id=source_id,
        version_id=found.version_id,
        reason=found.reason,
        tables=[
            TableOut(
                index=index,
                number=t.number,
                untrusted_rows=[list(r) for r in t.table.rows],
                row_numbers=list(t.row_numbers()),
                header_rows=t.table.header_rows,
                location=t.location.to_dict(),
                location_label=t.location.label(),
                heading_path=list(t.heading_path),
            )
            for index, t in enumerate(found.tables)
        ],
    )


@router.delete("/v1/sources/{source_id}", response_model=LifecycleOut, status_code=202)
def delete_source(source_id: str, who: PrincipalDep, platform: PlatformDep) -> LifecycleOut:
    """Unsearchable at once; the deletion sweep purges every store shortly after."""
    sources.delete(platform, who, source_id)
    return LifecycleOut(
        source_id=source_id,
        state="deleting",
        message="The source is no longer searchable; its data is being purged.",
    )


@router.put("/v1/sources/{source_id}/subjects", response_model=LifecycleOut)
def set_subjects(
    source_id: str, body: SubjectsBody, who: PrincipalDep, platform: PlatformDep
) -> LifecycleOut:
    """Who may read the source. Takes effect on search at once (result-time
    re-check) and in both indexes before this returns."""
    sources.change_subjects(platform, who, source_id, body.subjects)
    return LifecycleOut(
        source_id=source_id, state="active", message="Permissions updated in every store."
    )


@router.put("/v1/sources/{source_id}/tags", response_model=LifecycleOut)
def set_tags(
    source_id: str, body: TagsBody, who: PrincipalDep, platform: PlatformDep
) -> LifecycleOut:
    """Tags filter searches inside both legs; they reach both indexes before this returns."""
    sources.change_tags(platform, who, source_id, body.tags)
    return LifecycleOut(source_id=source_id, state="active", message="Tags updated in every store.")
