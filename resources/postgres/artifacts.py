"""ArtifactStore on Postgres: the generation moves only in `commit_version`,
under a row lock, in the same transaction that points the document at the
new version. Exports are unique per (tenant, artifact, version, format)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from groundwork.artifact_staleness import CitedChunk, CitedSource
from groundwork.artifacts import (
    ArtifactFile,
    ArtifactRecord,
    ArtifactVersion,
    NewFile,
    StaleGenerationError,
)
from groundwork.ports import AccessScope
from resources.postgres.database import translated_errors
from resources.postgres.tenant_wall import ConnectionSource

_VISIBLE = "a.tenant_id = %s AND groundwork_readable(s.subjects, %s) AND s.state = 'active'"
#: an artifact with its document's name, subjects, current version and indexing state
_RECORDS = (
    "SELECT a.artifact_id, a.tenant_id, a.source_id, a.format, a.generation, s.filename, "
    "s.subjects, s.current_version_id, v.processing_state, a.created_at "
    "FROM artifacts a JOIN sources s USING (source_id) "
    "LEFT JOIN source_versions v ON v.version_id = s.current_version_id"
)


def _record(row: dict[str, Any]) -> ArtifactRecord:
    return ArtifactRecord(**{**row, "subjects": tuple(row["subjects"])})


class PostgresArtifacts:
    def __init__(self, pool: ConnectionSource) -> None:
        self.pool = pool

    def commit_version(
        self,
        tenant_id: str,
        artifact_id: str,
        source_id: str,
        expected_generation: int,
        source_version_id: str,
        provenance: dict[str, Any],
        restored_from: int | None,
        summary: Sequence[str],
        files: Sequence[NewFile],
    ) -> int:
        with translated_errors("committing an artifact version"), self.pool.connection() as conn:
            with conn.transaction():
                if expected_generation == 0:  # the format is the first primary file's, for good
                    fmt = next((f.format for f in files if f.role == "primary"), "markdown")
                    conn.execute(
                        "INSERT INTO artifacts (artifact_id, tenant_id, source_id, format) "
                        "VALUES (%s, %s, %s, %s) ON CONFLICT (artifact_id) DO NOTHING",
                        (artifact_id, tenant_id, source_id, fmt),
                    )
                row = conn.execute(
                    "SELECT generation FROM artifacts WHERE artifact_id = %s AND tenant_id = %s FOR UPDATE",
                    (artifact_id, tenant_id),
                ).fetchone()
                if row is None or row[0] != expected_generation:
                    raise StaleGenerationError(row[0] if row else 0)
                generation = expected_generation + 1
                conn.execute(
                    "UPDATE artifacts SET generation = %s WHERE artifact_id = %s",
                    (generation, artifact_id),
                )
                conn.execute(
                    "INSERT INTO artifact_versions (artifact_id, generation, tenant_id, source_version_id, "
                    "provenance, restored_from, summary) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (
                        artifact_id,
                        generation,
                        tenant_id,
                        source_version_id,
                        Jsonb(provenance),
                        restored_from,
                        list(summary),
                    ),
                )
                # the swap: the current role rows are replaced, their blobs queued for the purge
                conn.execute(
                    "WITH gone AS (DELETE FROM artifact_files WHERE artifact_id = %s "
                    "AND tenant_id = %s AND role IN ('primary', 'preview', 'source') "
                    "RETURNING blob_key) INSERT INTO artifact_blob_purges "
                    "(tenant_id, blob_key, artifact_id) SELECT DISTINCT %s, blob_key, %s FROM gone "
                    "ON CONFLICT (tenant_id, blob_key) DO NOTHING",
                    (artifact_id, tenant_id, tenant_id, artifact_id),
                )
                conn.execute(
                    "UPDATE sources SET current_version_id = %s, updated_at = now(), "
                    "generation = generation + 1 WHERE source_id = %s AND tenant_id = %s",
                    (source_version_id, source_id, tenant_id),
                )
                for f in files:
                    self._insert_file(conn, tenant_id, artifact_id, generation, f)
        return generation

    @staticmethod
    def _insert_file(
        conn: Any, tenant_id: str, artifact_id: str, generation: int, f: NewFile
    ) -> str:
        file_id = f"afl_{uuid.uuid4().hex}"
        conn.execute(
            "INSERT INTO artifact_files (file_id, tenant_id, artifact_id, generation, role, format, "
            "media_type, blob_key, sha256, size_bytes) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                file_id,
                tenant_id,
                artifact_id,
                generation,
                f.role,
                f.format,
                f.media_type,
                f.blob_key,
                f.sha256,
                f.size_bytes,
            ),
        )
        return file_id

    def get(self, scope: AccessScope, artifact_id: str) -> ArtifactRecord | None:
        if not scope.subjects:
            return None
        with translated_errors("reading an artifact"), self.pool.connection() as conn:
            row = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    f"{_RECORDS} WHERE a.artifact_id = %s AND {_VISIBLE} AND a.generation > 0",
                    (artifact_id, scope.tenant_id, list(scope.subjects)),
                )
                .fetchone()
            )
        return _record(row) if row is not None else None

    def list_artifacts(
        self, scope: AccessScope, after: str | None, limit: int
    ) -> tuple[list[ArtifactRecord], str | None]:
        if not scope.subjects:
            return [], None
        params: list[object] = [scope.tenant_id, list(scope.subjects)]
        where = _VISIBLE + " AND a.generation > 0"
        if after:
            where += " AND a.artifact_id > %s"
            params.append(after)
        with translated_errors("listing artifacts"), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    f"{_RECORDS} WHERE {where} ORDER BY a.artifact_id LIMIT %s",
                    (*params, limit + 1),
                )
                .fetchall()
            )
        records = [_record(r) for r in rows[:limit]]
        return records, (records[-1].artifact_id if len(rows) > limit else None)

    def versions(self, scope: AccessScope, artifact_id: str) -> list[ArtifactVersion]:
        if self.get(scope, artifact_id) is None:
            return []
        with translated_errors("reading artifact history"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT av.generation, av.source_version_id, av.provenance, av.restored_from, av.summary, "
                "av.created_at, v.blob_key, v.sha256 FROM artifact_versions av "
                "JOIN source_versions v ON v.version_id = av.source_version_id "
                "WHERE av.artifact_id = %s AND av.tenant_id = %s ORDER BY av.generation",
                (artifact_id, scope.tenant_id),
            ).fetchall()
        return [
            ArtifactVersion(g, sv, prov, rf, tuple(summary), at, key, sha)
            for g, sv, prov, rf, summary, at, key, sha in rows
        ]

    def files(self, scope: AccessScope, artifact_id: str, generation: int) -> list[ArtifactFile]:
        if self.get(scope, artifact_id) is None:
            return []
        with translated_errors("listing artifact files"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT file_id, artifact_id, generation, role, format, media_type, blob_key, sha256, "
                "size_bytes FROM artifact_files WHERE artifact_id = %s AND generation = %s "
                "AND tenant_id = %s ORDER BY role, format",
                (artifact_id, generation, scope.tenant_id),
            ).fetchall()
        return [ArtifactFile(*r) for r in rows]

    def file(self, scope: AccessScope, file_id: str) -> ArtifactFile | None:
        with translated_errors("reading an artifact file"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT f.file_id, f.artifact_id, f.generation, f.role, f.format, f.media_type, "
                "f.blob_key, f.sha256, f.size_bytes FROM artifact_files f "
                "JOIN artifacts a USING (artifact_id) JOIN sources s USING (source_id) "
                f"WHERE f.file_id = %s AND {_VISIBLE}",
                (file_id, scope.tenant_id, list(scope.subjects)),
            ).fetchone()
        return ArtifactFile(*row) if row else None

    def cited_chunks(self, tenant_id: str, chunk_ids: Sequence[str]) -> dict[str, CitedChunk]:
        if not chunk_ids:
            return {}
        with translated_errors("reading cited chunks"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT c.chunk_id, c.content_hash, s.state = 'active' FROM chunks c "
                "JOIN sources s USING (source_id) WHERE c.tenant_id = %s AND c.chunk_id = ANY(%s)",
                (tenant_id, list(chunk_ids)),
            ).fetchall()
        return {chunk_id: CitedChunk(digest, live) for chunk_id, digest, live in rows}

    def cited_sources(self, tenant_id: str, source_ids: Sequence[str]) -> dict[str, CitedSource]:
        if not source_ids:
            return {}
        with translated_errors("reading cited sources"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT source_id, current_version_id, state = 'active' FROM sources "
                "WHERE tenant_id = %s AND source_id = ANY(%s)",
                (tenant_id, list(source_ids)),
            ).fetchall()
        return {source_id: CitedSource(current, live) for source_id, current, live in rows}

    # superseded blobs ---------------------------------------------------------------------
    def queued_purges(self, tenant_id: str, artifact_id: str | None = None) -> list[str]:
        with translated_errors("listing queued purges"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT blob_key FROM artifact_blob_purges WHERE tenant_id = %s "
                "AND (%s::text IS NULL OR artifact_id = %s) ORDER BY queued_at, blob_key",
                (tenant_id, artifact_id, artifact_id),
            ).fetchall()
        return [r[0] for r in rows]

    def blob_referenced(self, blob_key: str) -> bool:
        """Across tenants (identical bytes are one blob): the owner's function answers yes/no."""
        with translated_errors("checking a blob's references"), self.pool.connection() as conn:
            row = conn.execute("SELECT groundwork_blob_referenced(%s)", (blob_key,)).fetchone()
        return bool(row and row[0])

    def finish_purge(self, tenant_id: str, blob_key: str, error: str | None) -> None:
        with translated_errors("recording a purge"), self.pool.connection() as conn:
            if error is None:
                conn.execute(
                    "DELETE FROM artifact_blob_purges WHERE tenant_id = %s AND blob_key = %s",
                    (tenant_id, blob_key),
                )
            else:
                conn.execute(
                    "UPDATE artifact_blob_purges SET attempts = attempts + 1, last_error = %s "
                    "WHERE tenant_id = %s AND blob_key = %s",
                    (error[:500], tenant_id, blob_key),
                )

    def discard_version(self, tenant_id: str, source_id: str, version_id: str) -> str | None:
        with translated_errors("discarding a staged version"), self.pool.connection() as conn:
            row = conn.execute(
                "DELETE FROM source_versions v WHERE v.version_id = %s AND v.tenant_id = %s "
                "AND v.source_id = %s AND NOT EXISTS (SELECT 1 FROM sources s "
                "  WHERE s.current_version_id = v.version_id) "
                "AND NOT EXISTS (SELECT 1 FROM artifact_versions a "
                "  WHERE a.source_version_id = v.version_id) RETURNING v.blob_key",
                (version_id, tenant_id, source_id),
            ).fetchone()
        return row[0] if row else None

    # exports ------------------------------------------------------------------------------
    def claim_export(
        self, tenant_id: str, artifact_id: str, generation: int, fmt: str
    ) -> tuple[dict[str, Any], bool]:
        """(the export row, whether this caller claimed the render). A failed
        export is reclaimed, so a retry renders again."""
        export_id = f"exp_{uuid.uuid4().hex}"
        with translated_errors("claiming an export"), self.pool.connection() as conn:
            with conn.transaction():
                inserted = conn.execute(
                    "INSERT INTO artifact_exports (export_id, tenant_id, artifact_id, generation, format, renders) "
                    "VALUES (%s, %s, %s, %s, %s, 1) ON CONFLICT (tenant_id, artifact_id, generation, format) "
                    "DO NOTHING RETURNING export_id",
                    (export_id, tenant_id, artifact_id, generation, fmt),
                ).fetchone()
                claimed = inserted is not None
                if not claimed:
                    retried = conn.execute(
                        "UPDATE artifact_exports SET state = 'pending', failure_reason = NULL, "
                        "renders = renders + 1 WHERE tenant_id = %s AND artifact_id = %s AND generation = %s "
                        "AND format = %s AND state = 'failed' RETURNING export_id",
                        (tenant_id, artifact_id, generation, fmt),
                    ).fetchone()
                    claimed = retried is not None
            row = self._export_row(conn, tenant_id, artifact_id, generation, fmt)
        return row, claimed

    @staticmethod
    def _export_row(
        conn: Any, tenant_id: str, artifact_id: str, generation: int, fmt: str
    ) -> dict[str, Any]:
        row = (
            conn.cursor(row_factory=dict_row)
            .execute(
                "SELECT * FROM artifact_exports WHERE tenant_id = %s AND artifact_id = %s "
                "AND generation = %s AND format = %s",
                (tenant_id, artifact_id, generation, fmt),
            )
            .fetchone()
        )
        assert row is not None
        return dict(row)

    def finish_export(
        self,
        export: dict[str, Any],
        file: NewFile | None,
        failure: str | None,
        unrenderable: Sequence[str] = (),
        receipt: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        with translated_errors("finishing an export"), self.pool.connection() as conn:
            with conn.transaction():
                file_id = (
                    self._insert_file(
                        conn, export["tenant_id"], export["artifact_id"], export["generation"], file
                    )
                    if file is not None
                    else None
                )
                conn.execute(
                    "UPDATE artifact_exports SET state = %s, file_id = %s, failure_reason = %s, "
                    "unrenderable = %s, receipt = %s WHERE export_id = %s AND state = 'pending'",
                    (
                        "rendered" if file_id else "failed",
                        file_id,
                        None if file_id else (failure or "render failed"),
                        list(unrenderable),
                        Jsonb(receipt) if receipt is not None else None,
                        export["export_id"],
                    ),
                )
            return self._export_row(
                conn,
                export["tenant_id"],
                export["artifact_id"],
                export["generation"],
                export["format"],
            )

    def wait_export(self, export: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        """Another request is rendering it: wait for its outcome instead of rendering again."""
        deadline = time.monotonic() + timeout
        row = export
        while row["state"] == "pending" and time.monotonic() < deadline:
            time.sleep(0.1)
            with self.pool.connection() as conn:
                row = self._export_row(
                    conn,
                    export["tenant_id"],
                    export["artifact_id"],
                    export["generation"],
                    export["format"],
                )
        return row
