"""File versions as the people who uploaded them see them: the metadata side
of storage (the bytes live behind the BlobStore port). Listing is keyset-paged
so a tenant with a million files pages in constant time, and entitlement is
the same rule everywhere: the caller's tenant, and the file's permission scope
intersecting the caller's subjects. Storage keys never appear here.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from groundwork.errors import InvalidRequest
from groundwork.ports import AccessScope

MAX_PAGE = 200


@dataclass(frozen=True, slots=True)
class FileVersionInfo:
    source_id: str
    version_id: str
    version_no: int
    filename: str
    declared_type: str
    sniffed_type: str
    size_bytes: int
    sha256: str
    state: str  # pending | stored | quarantined | deleting | deleted
    processing_state: str  # pending | extracting | extracted | failed
    failure_reason: str | None
    low_confidence: bool
    is_current: bool
    created_at: datetime
    #: one corpus: "artifact" for a generated artifact's document, with its id
    document_type: str = "source"
    artifact_id: str | None = None


@dataclass(frozen=True, slots=True)
class FilePage:
    files: tuple[FileVersionInfo, ...]
    next_cursor: str | None  # None: this was the last page


def encode_cursor(created_at: datetime, version_id: str) -> str:
    raw = f"{created_at.isoformat()}|{version_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, version_id = raw.split("|", 1)
        return datetime.fromisoformat(stamp), version_id
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest(
            "the cursor is not one this service issued; start again without a cursor"
        ) from exc


def stored_version(
    versions: Sequence[FileVersionInfo], version_no: int | None = None
) -> FileVersionInfo | None:
    """The stored version to read: the current one, or version `version_no`."""
    return next(
        (
            v
            for v in versions
            if v.state == "stored" and (v.version_no == version_no if version_no else v.is_current)
        ),
        None,
    )


@runtime_checkable
class FileMetadataStore(Protocol):
    """One row per file version, tenant-scoped, soft-deleted.

    Contract:
    - `list_files` returns the scope's visible versions of live sources, newest
      first, at most `min(limit, MAX_PAGE)`, with a cursor for the next page
      that stays correct while files are added (keyset, not offset).
    - `versions` lists one source's versions, oldest first; None when the
      source does not exist or is not visible (the same answer: no oracle).
    - Nothing returned names a storage key.
    """

    def list_files(self, scope: AccessScope, cursor: str | None, limit: int) -> FilePage: ...

    def versions(self, scope: AccessScope, source_id: str) -> list[FileVersionInfo] | None: ...

    def origin_of(self, scope: AccessScope, source_id: str) -> tuple[str, str] | None:
        """(origin, filename) of a visible live source: where a new version goes."""
        ...
