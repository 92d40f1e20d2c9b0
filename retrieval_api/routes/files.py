"""Signed references to file versions, and reads through them. The blob store
cannot sign URLs itself, so the service proxies the read; the storage key
never leaves the platform."""

from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from groundwork.errors import NotFound
from groundwork.signing import MAX_LIFETIME, Refused, sign, verify
from resources.signing_key import signing_secret
from retrieval_api.deps import PlatformDep, PrincipalDep
from retrieval_api.errors import error_response
from retrieval_api.schemas import ReferenceOut

router = APIRouter()


@router.post("/v1/sources/{source_id}/reference", response_model=ReferenceOut)
def create_reference(
    source_id: str,
    who: PrincipalDep,
    platform: PlatformDep,
    ttl_seconds: Annotated[int, Query(ge=1)] = int(MAX_LIFETIME.total_seconds()),
) -> ReferenceOut:
    """A link to the current version's bytes, valid for at most 15 minutes."""
    status = platform.catalog.source_status(who.scope, source_id)
    if status is None:
        raise NotFound(f"no source {source_id} is visible to this key")
    token, expires_at = sign(
        signing_secret(platform.settings),
        who.tenant_id,
        source_id,
        str(status["version_id"]),
        timedelta(seconds=ttl_seconds),
        datetime.now(UTC),
    )
    return ReferenceOut(url=f"/v1/files/{token}", expires_at=expires_at.isoformat())


@router.get("/v1/files/{token}", response_model=None)
def read_reference(token: str, platform: PlatformDep) -> Response | JSONResponse:
    checked = verify(signing_secret(platform.settings), token, datetime.now(UTC))
    if isinstance(checked, Refused):
        if checked.reason == "expired":
            return error_response(410, "expired", "the reference has expired; ask for a new one")
        return error_response(403, "forged", "the reference is not valid")
    found = platform.catalog.readable_version(
        checked.tenant_id, checked.source_id, checked.version_id
    )
    if found is None:  # deleted since the reference was made
        raise NotFound("the file is no longer available")
    blob_key, filename, media_type = found
    return Response(
        content=platform.blobs.get(blob_key),
        media_type=media_type,
        headers={"Content-Disposition": f'attachment; filename="{filename.rsplit("/", 1)[-1]}"'},
    )
