"""What the catalog's parts share: the pool, the version row shape."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import psycopg
from psycopg.rows import dict_row

from groundwork.catalog import (
    VersionRecord,
)
from resources.postgres.tenant_wall import ConnectionSource

VERSION_COLUMNS = """
    v.version_id, v.tenant_id, v.source_id, v.version_no, s.filename, v.media_type, v.sha256,
    v.size_bytes, v.blob_key, s.subjects, v.state, v.processing_state, v.title, v.failure_reason,
    s.tags, v.created_at
"""


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def version_record(row: dict) -> VersionRecord:  # type: ignore[type-arg]
    return VersionRecord(
        version_id=row["version_id"],
        tenant_id=row["tenant_id"],
        source_id=row["source_id"],
        version_no=row["version_no"],
        filename=row["filename"],
        media_type=row["media_type"],
        sha256=row["sha256"],
        size_bytes=row["size_bytes"],
        blob_key=row["blob_key"],
        subjects=tuple(row["subjects"]),
        state=row["state"],
        processing_state=row["processing_state"],
        title=row["title"],
        failure_reason=row["failure_reason"],
        tags=tuple(row["tags"]),
        created_at=row["created_at"],
    )


def select_versions(
    conn: psycopg.Connection, rest: str, params: Sequence[object]
) -> list[VersionRecord]:
    """The versions a query selects, each joined to its source (aliases `v`
    and `s`); `rest` follows that join: further joins, the filter, the order."""
    rows = (
        conn.cursor(row_factory=dict_row)
        .execute(
            f"SELECT {VERSION_COLUMNS} FROM source_versions v JOIN sources s USING (source_id) {rest}",
            params,
        )
        .fetchall()
    )
    return [version_record(r) for r in rows]


class StoreBase:
    """Every part of the catalog talks to the same pool (or the same walled view)."""

    def __init__(self, pool: ConnectionSource) -> None:
        self.pool = pool
