"""Resumable upload sessions: create (declared name, size, type, scope) ->
send parts at the acknowledged offset -> complete (sniff, check, register)."""

import os
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from groundwork.services.uploads import complete_session, open_session, owned_session
from resources.blobs.upload_staging import UploadStaging
from resources.composition.platform import Platform
from retrieval_api.deps import PlatformDep, PrincipalDep
from retrieval_api.errors import error_response
from retrieval_api.schemas import UploadComplete, UploadCreate, UploadOut

router = APIRouter()


def _staging(platform: Platform) -> UploadStaging:
    return UploadStaging(platform.settings.home / "uploads")


def _out(row: dict[str, object]) -> UploadOut:
    return UploadOut(
        upload_id=str(row["upload_id"]),
        filename=str(row["filename"]),
        size=int(row["declared_size"]),  # type: ignore[call-overload]
        received=int(row["received"]),  # type: ignore[call-overload]
        state=row["state"],  # type: ignore[arg-type]
        source_id=row.get("source_id"),  # type: ignore[arg-type]
        version_id=row.get("version_id"),  # type: ignore[arg-type]
    )


@router.post("/v1/uploads", response_model=UploadOut, status_code=201)
def create_upload(body: UploadCreate, who: PrincipalDep, platform: PlatformDep) -> UploadOut:
    return _out(
        open_session(
            platform,
            platform.catalog,
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
    return _out(owned_session(platform.catalog, who, upload_id))


@router.put("/v1/uploads/{upload_id}", response_model=UploadOut)
async def upload_part(
    upload_id: str,
    request: Request,
    who: PrincipalDep,
    platform: PlatformDep,
    offset: Annotated[int, Query(ge=0)],
) -> UploadOut | JSONResponse:
    """Bytes from `offset` (the acknowledged offset: resume from GET's `received`).
    The part is capped at the declared size while it streams: exceeding it stops
    the sender with 413 instead of draining the rest."""
    row = await run_in_threadpool(owned_session, platform.catalog, who, upload_id)
    if row["state"] != "open":
        return error_response(409, "not-open", f"the upload is {row['state']}")
    if offset != row["received"]:
        return error_response(
            409,
            "bad-offset",
            f"send bytes from offset {row['received']} (the last acknowledged byte)",
            received=row["received"],
        )
    room = int(row["declared_size"]) - offset
    path = _staging(platform).path(upload_id)
    written = 0
    with open(path, "r+b" if path.exists() else "w+b") as handle:
        handle.seek(offset)
        async for chunk in request.stream():
            if written + len(chunk) > room:
                handle.truncate(offset)
                return error_response(
                    413,
                    "too-large",
                    f"the upload exceeded its declared size of {row['declared_size']} bytes; nothing past offset {offset} was kept",
                )
            handle.write(chunk)
            written += len(chunk)
        handle.truncate(offset + written)
        handle.flush()
        os.fsync(handle.fileno())  # durable before it is acknowledged
    if not platform.catalog.advance_upload(upload_id, offset, offset + written):
        return error_response(
            409,
            "bad-offset",
            "another part was acknowledged meanwhile; read the progress and resume",
        )
    updated = platform.catalog.upload(who.tenant_id, upload_id)
    assert updated is not None
    return _out(updated)


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
        complete_session(
            platform,
            platform.catalog,
            _staging(platform),
            who,
            upload_id,
            replace_existing=bool(body and body.replace_existing),
        )
    )
