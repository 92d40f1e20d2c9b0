"""Registration: pending rows first, then stored (the write order)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from psycopg import Connection
from psycopg.types.json import Jsonb

from groundwork.catalog import (
    NeedsApproval,
    PendingVersion,
    Unchanged,
)
from groundwork.errors import InvalidRequest
from groundwork.stages.registration import blob_key_for
from resources.postgres.catalog_parts.common import StoreBase
from resources.postgres.database import translated_errors


class Registration(StoreBase):
    # registration -------------------------------------------------------------------
    def begin_version(
        self,
        tenant_id: str,
        origin: str,
        filename: str,
        subjects: Sequence[str],
        sha256: str,
        size_bytes: int,
        media_type: str,
        declared_type: str = "",
        replace: bool = True,
        doc_type: str = "file",
        location: tuple[tuple[str, str], ...] = (),
    ) -> PendingVersion | Unchanged | NeedsApproval:
        with translated_errors("registering a version"), self.pool.connection() as conn:
            with conn.transaction():
                # Lock the source row so two registrations of one origin serialize.
                row = conn.execute(
                    "SELECT source_id, current_version_id, state, doc_type FROM sources "
                    "WHERE tenant_id = %s AND origin = %s FOR UPDATE",
                    (tenant_id, origin),
                ).fetchone()
                is_new = row is None
                if row is None:
                    source_id = f"src_{uuid.uuid4().hex}"
                    conn.execute(
                        "INSERT INTO sources (source_id, tenant_id, origin, filename, subjects, doc_type) "
                        "VALUES (%s, %s, %s, %s, %s, %s)",
                        (source_id, tenant_id, origin, filename, list(subjects), doc_type),
                    )
                else:
                    source_id = row[0]
                    settled = _settled_without_new_version(
                        conn, row, origin, subjects, sha256, replace, doc_type
                    )
                    if settled is not None:
                        return settled
                version_id, blob_key = _insert_version(
                    conn,
                    tenant_id,
                    source_id,
                    sha256,
                    size_bytes,
                    media_type,
                    declared_type,
                    dict(location),
                )
        return PendingVersion(version_id, source_id, blob_key, is_new)

    def mark_quarantined(self, version_id: str, signature: str) -> bool:
        with translated_errors("quarantining a version"), self.pool.connection() as conn:
            row = conn.execute(
                "UPDATE source_versions SET state = 'quarantined', scan_result = %s "
                "WHERE version_id = %s AND state = 'pending' RETURNING 1",
                (f"infected:{signature}", version_id),
            ).fetchone()
        return row is not None

    def mark_stored(
        self, version_id: str, scan_result: str | None = None, make_current: bool = True
    ) -> bool:
        with translated_errors("marking a version stored"), self.pool.connection() as conn:
            with conn.transaction():
                row = conn.execute(
                    "UPDATE source_versions SET state = 'stored', scan_result = %s "
                    "WHERE version_id = %s AND state = 'pending' RETURNING source_id",
                    (scan_result, version_id),
                ).fetchone()
                if row is None:
                    return False
                if not make_current:
                    return True
                conn.execute(
                    "UPDATE sources SET current_version_id = %s, updated_at = now(), "
                    "generation = generation + 1 WHERE source_id = %s",
                    (version_id, row[0]),
                )
        return True


def _settled_without_new_version(
    conn: Connection[Any],
    row: tuple[Any, ...],
    origin: str,
    subjects: Sequence[str],
    sha256: str,
    replace: bool,
    doc_type: str,
) -> Unchanged | NeedsApproval | None:
    """An existing (locked) source: the same bytes are Unchanged, other bytes
    without `replace` need approval, a document of another type or one being
    deleted is refused; None means a new version is to be written (a source
    that was deleted becomes active again with the new subjects)."""
    source_id, current, state, existing_type = row
    if existing_type != doc_type:
        raise InvalidRequest(
            f"source {source_id} is an {existing_type} document; it changes only "
            "through its own write path (artifacts: /v1/artifacts/{id}/revise)"
        )
    if state == "deleting":
        raise InvalidRequest(
            f"{origin} is being deleted; register it again once the deletion completes"
        )
    if state == "active" and current is not None:
        same = conn.execute(
            "SELECT 1 FROM source_versions WHERE version_id = %s AND sha256 = %s",
            (current, sha256),
        ).fetchone()
        if same:
            return Unchanged(source_id, current)
        if not replace:
            current_no = conn.execute(
                "SELECT version_no FROM source_versions WHERE version_id = %s", (current,)
            ).fetchone()
            assert current_no is not None
            return NeedsApproval(source_id, current, current_no[0])
    if state != "active":
        conn.execute(
            "UPDATE sources SET state = 'active', subjects = %s, updated_at = now() "
            "WHERE source_id = %s",
            (list(subjects), source_id),
        )
    return None


def _insert_version(
    conn: Connection[Any],
    tenant_id: str,
    source_id: str,
    sha256: str,
    size_bytes: int,
    media_type: str,
    declared_type: str,
    location: dict[str, str],
) -> tuple[str, str]:
    """The next version number of the source, `pending` until its bytes are stored."""
    number = conn.execute(
        "SELECT coalesce(max(version_no), 0) + 1 FROM source_versions WHERE source_id = %s",
        (source_id,),
    ).fetchone()
    assert number is not None
    version_id = f"ver_{uuid.uuid4().hex}"
    blob_key = blob_key_for(sha256)
    conn.execute(
        "INSERT INTO source_versions (version_id, tenant_id, source_id, version_no, sha256, "
        "size_bytes, media_type, blob_key, declared_type, source_location) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            version_id,
            tenant_id,
            source_id,
            number[0],
            sha256,
            size_bytes,
            media_type,
            blob_key,
            declared_type,
            Jsonb(location),
        ),
    )
    return version_id, blob_key
