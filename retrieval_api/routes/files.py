"""Signed references to file versions, and reads through them. The blob store
cannot sign URLs itself, so the service proxies the read; the storage key
never leaves the platform."""

from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response, StreamingResponse

from groundwork.errors import NotFound
from groundwork.files import MAX_PAGE, stored_version
from groundwork.services.hygiene import content_disposition
from groundwork.signing import MAX_LIFETIME, Refused, sign, verify
from resources.composition.signing_key import signing_secret
from retrieval_api.deps import PlatformDep, PrincipalDep, WholePlatformDep
from retrieval_api.errors import error_response
from retrieval_api.schemas import FileOut, FilePageOut, ReferenceOut

router = APIRouter()


@router.post("/v1/sources/{source_id}/reference", response_model=ReferenceOut)
def create_reference(
    source_id: str,
    who: PrincipalDep,
    platform: PlatformDep,
    ttl_seconds: Annotated[int, Query(ge=1)] = int(MAX_LIFETIME.total_seconds()),
    version: Annotated[
        int | None, Query(ge=1, description="a version number; default current")
    ] = None,
) -> ReferenceOut:
    """A link to a version's bytes (the current one unless `version` is given),
    valid for at most 15 minutes whatever `ttl_seconds` asks."""
    chosen = stored_version(platform.files.versions(who.scope, source_id) or [], version)
    if chosen is None:
        raise NotFound(f"no stored version of source {source_id} is visible to this key")
    token, expires_at = sign(
        signing_secret(platform.settings),
        who.tenant_id,
        source_id,
        chosen.version_id,
        # clamped before any arithmetic: 10**14 seconds would overflow timedelta
        timedelta(seconds=min(ttl_seconds, int(MAX_LIFETIME.total_seconds()))),
        datetime.now(UTC),
    )
    return ReferenceOut(url=f"/v1/files/{token}", expires_at=expires_at.isoformat())


@router.get("/v1/files", response_model=FilePageOut)
def list_files(
    who: PrincipalDep,
    platform: PlatformDep,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1)] = 50,
) -> FilePageOut:
    """File versions the caller may see, newest first, keyset-paged: pass
    `next_cursor` back as `cursor` for the next page. `limit` is clamped to 200."""
    page = platform.files.list_files(who.scope, cursor, limit)
    return FilePageOut(
        files=[FileOut.from_info(f) for f in page.files],
        next_cursor=page.next_cursor,
        limit=min(limit, MAX_PAGE),
    )


@router.get("/v1/sources/{source_id}/versions", response_model=list[FileOut])
def source_versions(source_id: str, who: PrincipalDep, platform: PlatformDep) -> list[FileOut]:
    """Every version of a source, oldest first (replaced versions stay readable)."""
    versions = platform.files.versions(who.scope, source_id)
    if versions is None:
        raise NotFound(f"no source {source_id} is visible to this key")
    return [FileOut.from_info(v) for v in versions]


@router.get("/v1/files/{token}", response_model=None)
def read_reference(token: str, whole: WholePlatformDep) -> Response | JSONResponse:
    """Proxied read: streamed from the store, never a storage URL handed out."""
    checked = verify(signing_secret(whole.settings), token, datetime.now(UTC))
    if isinstance(checked, Refused):
        if checked.reason == "expired":
            return error_response(410, "expired", "the reference has expired; ask for a new one")
        return error_response(403, "forged", "the reference is not valid")
    platform = whole.for_tenant(checked.tenant_id)
    found = platform.catalog.readable_version(
        checked.tenant_id, checked.source_id, checked.version_id
    )
    if found is None:  # deleted since the reference was made
        raise NotFound("the file is no longer available")
    blob_key, filename, media_type = found
    return StreamingResponse(
        platform.blobs.read_chunks(blob_key),
        media_type=media_type,
        headers={"Content-Disposition": content_disposition(filename)},
    )
