"""Resumable upload sessions: create (declared name, size, type, scope) ->
send parts at the acknowledged offset -> complete (sniff, check, register)."""

import os
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from groundwork.catalog import NeedsApproval
from groundwork.errors import NotFound
from groundwork.pipeline import IncomingFile, register_path
from groundwork.services.uploads import open_session, owned_session
from groundwork.uploads import check_content
from resources.platform import Platform
from resources.sniffing import sniff_path
from resources.upload_staging import UploadStaging
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
) -> UploadOut | JSONResponse:
    """Sniff, check, scan and register the staged bytes, streaming them (a large
    upload is never held in memory). Adding a version to a source that has
    other content needs `replace_existing: true`; the previous version stays
    readable."""
    row = owned_session(platform.catalog, who, upload_id)
    if row["state"] == "completed":
        return _out(row)
    if row["state"] != "open":
        return error_response(409, "not-open", f"the upload is {row['state']}; start a new one")
    if row["received"] != row["declared_size"]:
        return error_response(
            409,
            "incomplete",
            f"{row['received']} of {row['declared_size']} bytes received; resume from {row['received']}",
            received=row["received"],
        )
    staging = _staging(platform)
    path = staging.ensure(upload_id)
    filename = str(row["filename"])
    sniffed = sniff_path(path, filename)
    refused = check_content(filename, sniffed)
    if refused is not None:
        platform.catalog.finish_upload(upload_id, "refused", None, None)
        staging.discard(upload_id)
        return error_response(415, refused.reason, refused.message)
    origin = f"api:{filename}"
    if row.get("target_source_id"):
        target = platform.files.origin_of(who.scope, str(row["target_source_id"]))
        if target is None:
            raise NotFound(f"no source {row['target_source_id']} is visible to this key")
        origin = target[0]
    incoming = IncomingFile(
        tenant_id=who.tenant_id,
        origin=origin,
        filename=filename,
        subjects=tuple(row["subjects"]),  # type: ignore[arg-type]
        media_type=sniffed,
        declared_type=str(row["declared_type"]),
        replace=bool(body and body.replace_existing),
    )
    outcome = register_path(platform.catalog, platform.blobs, incoming, path, platform.scanner())
    if isinstance(outcome, NeedsApproval):
        return error_response(
            409,
            "approval-required",
            f"source {outcome.source_id} already holds other content as version "
            f"{outcome.current_version_no}; complete again with replace_existing=true to add "
            f"this as its next version (version {outcome.current_version_no} stays readable "
            f"through /v1/sources/{outcome.source_id}/versions), or upload under another filename",
            source_id=outcome.source_id,
        )
    if outcome.quarantined is not None:
        platform.catalog.finish_upload(upload_id, "refused", outcome.source_id, outcome.version_id)
        staging.discard(upload_id)
        return error_response(
            422,
            "malware-found",
            f"the malware scan found {outcome.quarantined}; the file is quarantined and will not "
            "be processed. Upload a clean copy.",
        )
    platform.catalog.finish_upload(upload_id, "completed", outcome.source_id, outcome.version_id)
    staging.discard(upload_id)
    done = platform.catalog.upload(who.tenant_id, upload_id)
    assert done is not None
    return _out(done)
