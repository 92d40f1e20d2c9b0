"""Resumable upload sessions: create (declared name, size, type, scope) ->
send parts at the acknowledged offset -> complete (sniff, check, register).
Each route maps to one call of groundwork.services.uploads."""

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from groundwork.services import uploads
from retrieval_api.body import blocking_parts, declared_length
from retrieval_api.deps import PlatformDep, PrincipalDep
from retrieval_api.schemas import UploadComplete, UploadCreate, UploadOut

router = APIRouter()


def _out(row: dict[str, Any]) -> UploadOut:
    return UploadOut(
        upload_id=str(row["upload_id"]),
        filename=str(row["filename"]),
        size=int(row["declared_size"]),
        received=int(row["received"]),
        state=row["state"],
        source_id=row.get("source_id"),
        version_id=row.get("version_id"),
    )


@router.post("/v1/uploads", response_model=UploadOut, status_code=201)
def create_upload(body: UploadCreate, who: PrincipalDep, platform: PlatformDep) -> UploadOut:
    return _out(
        uploads.open_session(
            platform,
            who,
            filename=body.filename,
            size=body.size,
            declared_type=body.media_type,
            subjects=body.subjects,
            target_source_id=body.source_id,
        )
    )


@router.get("/v1/uploads/{upload_id}", response_model=UploadOut)
def upload_progress(upload_id: str, who: PrincipalDep, platform: PlatformDep) -> UploadOut:
    return _out(uploads.owned_session(platform, who, upload_id))


@router.delete("/v1/uploads/{upload_id}", response_model=UploadOut)
def cancel_upload(upload_id: str, who: PrincipalDep, platform: PlatformDep) -> UploadOut:
    """Give up on an upload: no more parts, no completion, its staged bytes
    deleted now. A completed upload is a source: delete that instead (409)."""
    return _out(uploads.cancel_session(platform, who, upload_id))


@router.put("/v1/uploads/{upload_id}", response_model=UploadOut)
async def upload_part(
    upload_id: str,
    request: Request,
    who: PrincipalDep,
    platform: PlatformDep,
    offset: Annotated[int, Query(ge=0)],
) -> UploadOut:
    """Bytes from `offset` (the acknowledged offset: resume from GET's `received`).
    The part is capped at the declared size while it streams: exceeding it stops
    the sender with 413 instead of draining the rest."""
    row = await run_in_threadpool(
        uploads.receive_part,
        platform,
        who,
        upload_id,
        offset,
        blocking_parts(request),
        declared_length(request),
    )
    return _out(row)


@router.post("/v1/uploads/{upload_id}/complete", response_model=UploadOut)
def complete_upload(
    upload_id: str,
    who: PrincipalDep,
    platform: PlatformDep,
    body: UploadComplete | None = None,
) -> UploadOut:
    """Sniff, check, scan and register the staged bytes, streaming them (a large
    upload is never held in memory). Adding a version to a source that has
    other content needs `replace_existing: true`; the previous version stays
    readable."""
    return _out(
        uploads.complete_session(
            platform, who, upload_id, replace_existing=bool(body and body.replace_existing)
        )
    )
