"""Resumable upload sessions: create (declared name, size, type, scope) ->
send parts at the acknowledged offset -> complete (sniff, check, register)."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from groundwork.errors import NotFound
from groundwork.pipeline import register_file
from groundwork.uploads import MAX_UPLOAD_BYTES, check_content, check_declared
from resources.platform import Platform
from resources.sniffing import sniff_media_type
from resources.upload_staging import UploadStaging
from retrieval_api.deps import PlatformDep, PrincipalDep
from retrieval_api.errors import error_response
from retrieval_api.schemas import UploadCreate, UploadOut

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
def create_upload(
    body: UploadCreate, who: PrincipalDep, platform: PlatformDep
) -> UploadOut | JSONResponse:
    refused = check_declared(body.filename, body.size, MAX_UPLOAD_BYTES)
    if refused is not None:
        return error_response(
            413 if refused.reason == "too-large" else 415, refused.reason, refused.message
        )
    subjects = tuple(body.subjects) if body.subjects else who.subjects
    if not set(subjects) & set(who.subjects):
        return error_response(
            422, "invalid_request", "subjects must include at least one of the caller's own"
        )
    upload_id = platform.catalog.create_upload(
        who.scope, who.key_id, body.filename, body.size, body.media_type, subjects
    )
    row = platform.catalog.upload(who.tenant_id, upload_id)
    assert row is not None
    return _out(row)


@router.get("/v1/uploads/{upload_id}", response_model=UploadOut)
def upload_progress(upload_id: str, who: PrincipalDep, platform: PlatformDep) -> UploadOut:
    row = platform.catalog.upload(who.tenant_id, upload_id)
    if row is None:
        raise NotFound(f"no upload {upload_id}")
    return _out(row)


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
    row = platform.catalog.upload(who.tenant_id, upload_id)
    if row is None:
        raise NotFound(f"no upload {upload_id}")
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
    path = _staging(platform)._path(upload_id)
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
    upload_id: str, who: PrincipalDep, platform: PlatformDep
) -> UploadOut | JSONResponse:
    row = platform.catalog.upload(who.tenant_id, upload_id)
    if row is None:
        raise NotFound(f"no upload {upload_id}")
    if row["state"] == "completed":
        return _out(row)
    if row["received"] != row["declared_size"]:
        return error_response(
            409,
            "incomplete",
            f"{row['received']} of {row['declared_size']} bytes received; resume from {row['received']}",
            received=row["received"],
        )
    staging = _staging(platform)
    data = staging.read(upload_id) if int(row["declared_size"]) else b""  # type: ignore[call-overload]
    sniffed = sniff_media_type(data, str(row["filename"]))
    refused = check_content(str(row["filename"]), sniffed)
    if refused is not None:
        platform.catalog.finish_upload(upload_id, "refused", None, None)
        staging.discard(upload_id)
        return error_response(415, refused.reason, refused.message)
    registration = register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=who.tenant_id,
        origin=f"api:{row['filename']}",
        filename=str(row["filename"]),
        data=data,
        subjects=tuple(row["subjects"]),  # type: ignore[arg-type]
        media_type=sniffed,
    )
    platform.catalog.finish_upload(
        upload_id, "completed", registration.source_id, registration.version_id
    )
    staging.discard(upload_id)
    done = platform.catalog.upload(who.tenant_id, upload_id)
    assert done is not None
    return _out(done)
