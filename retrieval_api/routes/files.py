"""Signed references to file versions, and reads through them; file listings.
Each route maps to one call of groundwork.services.sources; the storage key
never leaves the platform."""

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from groundwork.services import sources
from groundwork.services.hygiene import content_disposition
from groundwork.signing import MAX_LIFETIME
from retrieval_api.deps import PlatformDep, PrincipalDep, WholePlatformDep
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
    made = sources.reference(platform, who, source_id, ttl_seconds=ttl_seconds, version=version)
    return ReferenceOut(url=made.url, expires_at=made.expires_at.isoformat())


@router.get("/v1/files", response_model=FilePageOut)
def list_files(
    who: PrincipalDep,
    platform: PlatformDep,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1)] = 50,
) -> FilePageOut:
    """File versions the caller may see, newest first, keyset-paged: pass
    `next_cursor` back as `cursor` for the next page. `limit` is clamped to 200."""
    page, applied = sources.list_files(platform, who, cursor, limit)
    return FilePageOut(
        files=[FileOut.from_info(f) for f in page.files],
        next_cursor=page.next_cursor,
        limit=applied,
    )


@router.get("/v1/sources/{source_id}/versions", response_model=list[FileOut])
def source_versions(source_id: str, who: PrincipalDep, platform: PlatformDep) -> list[FileOut]:
    """Every version of a source, oldest first (replaced versions stay readable)."""
    return [FileOut.from_info(v) for v in sources.versions(platform, who, source_id)]


@router.get("/v1/files/{token}", response_model=None)
def read_reference(token: str, whole: WholePlatformDep) -> StreamingResponse:
    """Proxied read: streamed from the store, never a storage URL handed out."""
    found = sources.read_reference(whole, token)
    return StreamingResponse(
        found.chunks,
        media_type=found.media_type,
        headers={"Content-Disposition": content_disposition(found.filename)},
    )
