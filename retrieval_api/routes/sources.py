"""Sources: registration over HTTP, processing status, reading windows, tables."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from groundwork.documents import (
    FAILURE_GUIDANCE,
    ExtractedDocument,
    ExtractionFailure,
    FailureReason,
)
from groundwork.errors import NotFound
from groundwork.lifecycle import change_subjects, change_tags, request_deletion
from groundwork.ports import Principal
from groundwork.reading import (
    MAX_WINDOW_BLOCKS,
    NothingToRead,
    extract_tables,
    fence_untrusted,
    read_document,
)
from groundwork.services.registration import (
    MAX_DIRECT_BYTES,
    check_before_bytes,
    register_bytes,
    sharing_subjects,
)
from resources.composition.platform import Platform
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

MAX_TABLES = 200


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
    declared = request.headers.get("content-length")
    # refused before reading a byte (size from the header, then from the stream)
    check_before_bytes(filename, int(declared) if declared and declared.isdigit() else 0)
    sharing_subjects(who, subjects)
    received = bytearray()
    async for part in request.stream():
        received.extend(part)
        if len(received) > MAX_DIRECT_BYTES:
            check_before_bytes(filename, len(received))
    registered = await run_in_threadpool(
        register_bytes,
        platform,
        who,
        filename,
        bytes(received),
        subjects=subjects,
        replace_existing=replace_existing,
    )
    return RegistrationOut(
        source_id=registered.source_id,
        version_id=registered.version_id,
        created=registered.created,
        media_type=registered.media_type,
    )


@router.get("/v1/sources/{source_id}/status", response_model=VersionStatusOut)
def source_status(source_id: str, who: PrincipalDep, platform: PlatformDep) -> VersionStatusOut:
    status = platform.catalog.source_status(who.scope, source_id)
    if status is None:
        raise NotFound(f"no source {source_id} is visible to this key")
    reason = status["failure_reason"]
    return VersionStatusOut(
        **status,  # type: ignore[arg-type]
        failure_guidance=FAILURE_GUIDANCE[FailureReason(str(reason))] if reason else None,
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
    found = platform.catalog.current_extraction(who.scope, source_id, version)
    if found is None:
        raise NotFound(f"no source {source_id} is visible to this key")
    version_id, document = found
    result = read_document(document, start_block=start_block, max_blocks=max_blocks)
    if isinstance(result, NothingToRead):
        return ReadOut(
            source_id=source_id,
            version_id=version_id,
            outcome="nothing_to_read",
            reason=result.reason,
            guidance=result.guidance,
            retry_may_help=result.retry_may_help,
        )
    return ReadOut(
        source_id=source_id,
        version_id=version_id,
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
    found = platform.catalog.current_extraction(who.scope, source_id)
    if found is None:
        raise NotFound(f"no source {source_id} is visible to this key")
    version_id, document = found
    if not isinstance(document, ExtractedDocument):
        reason = (
            document.reason.value
            if isinstance(document, ExtractionFailure)
            else "not-extracted-yet"
        )
        return TablesOut(source_id=source_id, version_id=version_id, tables=[], reason=reason)
    return TablesOut(
        source_id=source_id,
        version_id=version_id,
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
            for index, t in enumerate(extract_tables(document)[:MAX_TABLES])
        ],
    )


def _visible_or_404(platform: Platform, who: Principal, source_id: str) -> None:
    if platform.catalog.source_status(who.scope, source_id) is None:
        raise NotFound(f"no source {source_id} is visible to this key")


@router.delete("/v1/sources/{source_id}", response_model=LifecycleOut, status_code=202)
def delete_source(source_id: str, who: PrincipalDep, platform: PlatformDep) -> LifecycleOut:
    """Unsearchable at once; the deletion sweep purges every store shortly after."""
    _visible_or_404(platform, who, source_id)
    request_deletion(platform.catalog, platform.indexes(), who.tenant_id, source_id)
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
    _visible_or_404(platform, who, source_id)
    change_subjects(platform.catalog, platform.indexes(), who.tenant_id, source_id, body.subjects)
    return LifecycleOut(
        source_id=source_id, state="active", message="Permissions updated in every store."
    )


@router.put("/v1/sources/{source_id}/tags", response_model=LifecycleOut)
def set_tags(
    source_id: str, body: TagsBody, who: PrincipalDep, platform: PlatformDep
) -> LifecycleOut:
    """Tags filter searches inside both legs; they reach both indexes before this returns."""
    _visible_or_404(platform, who, source_id)
    change_tags(platform.catalog, platform.indexes(), who.tenant_id, source_id, body.tags)
    return LifecycleOut(source_id=source_id, state="active", message="Tags updated in every store.")
