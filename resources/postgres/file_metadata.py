"""FileMetadataStore on the catalog's tables (source_versions + sources)."""

from __future__ import annotations

from typing import Any

from psycopg.rows import dict_row

from groundwork.files import (
    MAX_PAGE,
    FilePage,
    FileVersionInfo,
    decode_cursor,
    encode_cursor,
)
from groundwork.ports import AccessScope
from resources.postgres.database import translated_errors
from resources.postgres.tenant_wall import ConnectionSource

_COLUMNS = (
    "s.source_id, v.version_id, v.version_no, s.filename, v.declared_type, "
    "v.media_type AS sniffed_type, v.size_bytes, v.sha256, v.state, v.processing_state, "
    "v.failure_reason, v.low_confidence, (s.current_version_id = v.version_id) AS is_current, "
    "v.created_at, CASE WHEN s.doc_type = 'artifact' THEN 'artifact' ELSE 'source' END "
    "AS document_type, (SELECT a.artifact_id FROM artifacts a WHERE a.source_id = s.source_id) "
    "AS artifact_id"
)
_VISIBLE = "s.tenant_id = %s AND groundwork_readable(s.subjects, %s) AND s.state = 'active' AND v.state <> 'deleted'"


def _info(row: dict[str, Any]) -> FileVersionInfo:
    return FileVersionInfo(**{**row, "is_current": bool(row["is_current"])})


class PostgresFileMetadata:
    def __init__(self, pool: ConnectionSource) -> None:
        self.pool = pool

    def list_files(self, scope: AccessScope, cursor: str | None, limit: int) -> FilePage:
        limit = max(1, min(limit, MAX_PAGE))
        if not scope.subjects:
            return FilePage((), None)
        where = _VISIBLE
        params: list[object] = [scope.tenant_id, list(scope.subjects)]
        if cursor:
            created_at, version_id = decode_cursor(cursor)
            where += " AND (v.created_at, v.version_id) < (%s, %s)"
            params += [created_at, version_id]
        with translated_errors("listing files"), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    f"SELECT {_COLUMNS} FROM source_versions v JOIN sources s USING (source_id) "
                    f"WHERE {where} ORDER BY v.created_at DESC, v.version_id DESC LIMIT %s",
                    (*params, limit + 1),
                )
                .fetchall()
            )
        files = tuple(_info(r) for r in rows[:limit])
        more = len(rows) > limit
        return FilePage(
            files, encode_cursor(files[-1].created_at, files[-1].version_id) if more else None
        )

    def versions(self, scope: AccessScope, source_id: str) -> list[FileVersionInfo] | None:
        if not scope.subjects:
            return None
        with translated_errors("listing versions"), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    f"SELECT {_COLUMNS} FROM source_versions v JOIN sources s USING (source_id) "
                    f"WHERE s.source_id = %s AND {_VISIBLE} ORDER BY v.version_no",
                    (source_id, scope.tenant_id, list(scope.subjects)),
                )
                .fetchall()
            )
        return [_info(r) for r in rows] or None

    def origin_of(self, scope: AccessScope, source_id: str) -> tuple[str, str] | None:
        if not scope.subjects:
            return None
        with translated_errors("finding a source"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT origin, filename FROM sources WHERE source_id = %s AND tenant_id = %s "
                "AND groundwork_readable(subjects, %s) AND state = 'active'",
                (source_id, scope.tenant_id, list(scope.subjects)),
            ).fetchone()
        return (row[0], row[1]) if row else None
