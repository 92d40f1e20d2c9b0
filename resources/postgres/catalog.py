"""The Catalog port on PostgreSQL."""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from collections.abc import Sequence
from typing import Any

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from groundwork.catalog import (
    ChunkBatch,
    NeedsApproval,
    PendingVersion,
    Tenant,
    TenantCounts,
    Unchanged,
    VersionRecord,
)
from groundwork.chunking import Chunk
from groundwork.citations import Citation
from groundwork.documents import ExtractedDocument, ExtractionFailure, FailureReason, Location
from groundwork.errors import InvalidRequest
from groundwork.pipeline import blob_key_for
from groundwork.ports import AccessScope, IndexedChunk, Principal
from groundwork.retrieval.outcome import ChunkView
from resources.postgres.database import translated_errors
from resources.postgres.tenant_wall import ConnectionSource

_VERSION_COLUMNS = """
    v.version_id, v.tenant_id, v.source_id, v.version_no, s.filename, v.media_type, v.sha256,
    v.size_bytes, v.blob_key, s.subjects, v.state, v.processing_state, v.title, v.failure_reason,
    s.tags, v.created_at
"""


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _version(row: dict) -> VersionRecord:  # type: ignore[type-arg]
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


class PostgresCatalog:
    def __init__(self, pool: ConnectionSource) -> None:
        self.pool = pool

    # tenants and keys -------------------------------------------------------------
    def ensure_tenant(self, tenant_id: str, display_name: str, active_model: str) -> Tenant:
        with translated_errors("creating a tenant"), self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO tenants (tenant_id, display_name, active_model) VALUES (%s, %s, %s) "
                "ON CONFLICT (tenant_id) DO NOTHING",
                (tenant_id, display_name, active_model),
            )
        tenant = self.get_tenant(tenant_id)
        assert tenant is not None
        return tenant

    def get_tenant(self, tenant_id: str) -> Tenant | None:
        with translated_errors("reading a tenant"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT tenant_id, display_name, active_model FROM tenants WHERE tenant_id = %s",
                (tenant_id,),
            ).fetchone()
        return Tenant(*row) if row else None

    def list_tenants(self) -> list[Tenant]:
        with translated_errors("listing tenants"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT tenant_id, display_name, active_model FROM tenants ORDER BY tenant_id"
            ).fetchall()
        return [Tenant(*r) for r in rows]

    def create_api_key(
        self,
        tenant_id: str,
        subjects: Sequence[str],
        label: str,
        scopes: Sequence[str] = ("files:read", "files:write", "artifacts:write"),
    ) -> tuple[str, str]:
        key_id = f"key_{uuid.uuid4().hex[:16]}"
        secret = f"gw_{secrets.token_urlsafe(32)}"
        with translated_errors("creating an API key"), self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO api_keys (key_id, tenant_id, key_hash, subjects, label, scopes) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                (key_id, tenant_id, hash_secret(secret), list(subjects), label, list(scopes)),
            )
        return key_id, secret

    def principal_for_key(self, secret: str) -> Principal | None:
        with translated_errors("authenticating"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT key_id, tenant_id, subjects, scopes FROM api_keys "
                "WHERE key_hash = %s AND revoked_at IS NULL",
                (hash_secret(secret),),
            ).fetchone()
        if row is None:
            return None
        return Principal(
            tenant_id=row[1], subjects=tuple(row[2]), key_id=row[0], scopes=tuple(row[3])
        )

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
                                "SELECT version_no FROM source_versions WHERE version_id = %s",
                                (current,),
                            ).fetchone()
                            assert current_no is not None
                            return NeedsApproval(source_id, current, current_no[0])
                    if state != "active":
                        conn.execute(
                            "UPDATE sources SET state = 'active', subjects = %s, updated_at = now() "
                            "WHERE source_id = %s",
                            (list(subjects), source_id),
                        )
                number = conn.execute(
                    "SELECT coalesce(max(version_no), 0) + 1 FROM source_versions WHERE source_id = %s",
                    (source_id,),
                ).fetchone()
                assert number is not None
                version_id = f"ver_{uuid.uuid4().hex}"
                blob_key = blob_key_for(sha256)
                conn.execute(
                    "INSERT INTO source_versions (version_id, tenant_id, source_id, version_no, sha256, "
                    "size_bytes, media_type, blob_key, declared_type) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
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
                    ),
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

    # extraction ----------------------------------------------------------------------
    def versions_to_extract(self, tenant_id: str, limit: int) -> list[VersionRecord]:
        with translated_errors("listing versions to extract"), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    f"SELECT {_VERSION_COLUMNS} FROM source_versions v JOIN sources s USING (source_id) "
                    "WHERE v.tenant_id = %s AND v.state = 'stored' AND s.state = 'active' "
                    "AND s.current_version_id = v.version_id "
                    "AND (v.processing_state = 'pending' OR (v.processing_state = 'extracting' "
                    "     AND v.extracted_at IS NULL)) "
                    "ORDER BY v.created_at, v.version_id LIMIT %s",
                    (tenant_id, limit),
                )
                .fetchall()
            )
        return [_version(r) for r in rows]

    def claim_extraction(self, version_id: str) -> bool:
        # 'extracting' may be reclaimed: a worker that died left it there, and the
        # stage runs one Dagster run per tenant at a time.
        with translated_errors("claiming an extraction"), self.pool.connection() as conn:
            row = conn.execute(
                "UPDATE source_versions SET processing_state = 'extracting' "
                "WHERE version_id = %s AND processing_state IN ('pending', 'extracting') RETURNING 1",
                (version_id,),
            ).fetchone()
        return row is not None

    def save_extraction(
        self, version_id: str, result: ExtractedDocument | ExtractionFailure
    ) -> None:
        with translated_errors("saving an extraction"), self.pool.connection() as conn:
            with conn.transaction():
                if isinstance(result, ExtractionFailure):
                    conn.execute(
                        "UPDATE source_versions SET processing_state = 'failed', failure_reason = %s, "
                        "failure_detail = %s, extracted_at = now() WHERE version_id = %s",
                        (result.reason.value, result.detail, version_id),
                    )
                    return
                conn.execute(
                    "INSERT INTO extracted_documents (version_id, tenant_id, document) "
                    "SELECT version_id, tenant_id, %s FROM source_versions WHERE version_id = %s "
                    "ON CONFLICT (version_id) DO UPDATE SET document = excluded.document",
                    (Jsonb(result.to_dict()), version_id),
                )
                conn.execute(
                    "UPDATE source_versions SET processing_state = 'extracted', title = %s, "
                    "low_confidence = %s, warnings = %s, extracted_at = now(), failure_reason = NULL, "
                    "failure_detail = NULL WHERE version_id = %s",
                    (result.title, result.low_confidence, list(result.warnings), version_id),
                )

    # chunking ------------------------------------------------------------------------
    def versions_to_chunk(
        self, tenant_id: str, limit: int
    ) -> list[tuple[VersionRecord, ExtractedDocument]]:
        with translated_errors("listing versions to chunk"), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    f"SELECT {_VERSION_COLUMNS}, d.document FROM source_versions v "
                    "JOIN sources s USING (source_id) JOIN extracted_documents d USING (version_id) "
                    "WHERE v.tenant_id = %s AND v.processing_state = 'extracted' AND v.chunked_at IS NULL "
                    "AND s.state = 'active' AND s.current_version_id = v.version_id "
                    "ORDER BY v.created_at, v.version_id LIMIT %s",
                    (tenant_id, limit),
                )
                .fetchall()
            )
        return [(_version(r), ExtractedDocument.from_dict(r["document"])) for r in rows]

    def replace_chunks(self, version: VersionRecord, chunks: Sequence[Chunk]) -> None:
        with translated_errors("writing chunks"), self.pool.connection() as conn:
            with conn.transaction():
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO chunks (chunk_id, tenant_id, source_id, version_id, position, "
                        "heading_path, body, kind, location, content_hash, token_count, low_confidence) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                        "ON CONFLICT (chunk_id) DO UPDATE SET version_id = excluded.version_id, "
                        "heading_path = excluded.heading_path, body = excluded.body, kind = excluded.kind, "
                        "location = excluded.location, content_hash = excluded.content_hash, "
                        "token_count = excluded.token_count, low_confidence = excluded.low_confidence, "
                        "updated_at = now()",
                        [
                            (
                                c.chunk_id,
                                c.tenant_id,
                                c.source_id,
                                c.version_id,
                                c.position,
                                list(c.heading_path),
                                c.body,
                                c.kind,
                                Jsonb(c.location.to_dict()),
                                c.content_hash,
                                c.token_count,
                                c.low_confidence,
                            )
                            for c in chunks
                        ],
                    )
                conn.execute(
                    "DELETE FROM chunks WHERE source_id = %s AND position >= %s",
                    (version.source_id, len(chunks)),
                )
                conn.execute(
                    "UPDATE source_versions SET chunked_at = now() WHERE version_id = %s",
                    (version.version_id,),
                )

    # indexes -------------------------------------------------------------------------
    def _batches(self, where: str, params: tuple[object, ...], limit: int) -> list[ChunkBatch]:
        with self.pool.connection() as conn:
            versions = [
                _version(r)
                for r in conn.cursor(row_factory=dict_row)
                .execute(
                    f"SELECT {_VERSION_COLUMNS} FROM source_versions v JOIN sources s USING (source_id) "
                    f"WHERE {where} ORDER BY v.created_at, v.version_id LIMIT %s",
                    (*params, limit),
                )
                .fetchall()
            ]
            batches: list[ChunkBatch] = []
            for version in versions:
                rows = (
                    conn.cursor(row_factory=dict_row)
                    .execute(
                        "SELECT chunk_id, heading_path, body, content_hash FROM chunks "
                        "WHERE source_id = %s AND version_id = %s ORDER BY position",
                        (version.source_id, version.version_id),
                    )
                    .fetchall()
                )
                indexed = tuple(
                    IndexedChunk(
                        chunk_id=r["chunk_id"],
                        tenant_id=version.tenant_id,
                        source_id=version.source_id,
                        version_id=version.version_id,
                        subjects=version.subjects,
                        media_type=version.media_type,
                        title=version.title or version.filename,
                        content=(" > ".join(r["heading_path"]) + "\n\n" + r["body"])
                        if r["heading_path"]
                        else r["body"],
                        content_hash=r["content_hash"],
                        tags=version.tags,
                        source_date=version.created_at,
                    )
                    for r in rows
                )
                batches.append(ChunkBatch(version, indexed))
        return batches

    def batches_to_keyword_index(self, tenant_id: str, limit: int) -> list[ChunkBatch]:
        with translated_errors("listing versions to index"):
            return self._batches(
                "v.tenant_id = %s AND v.chunked_at IS NOT NULL AND v.keyword_indexed_at IS NULL "
                "AND s.state = 'active' AND s.current_version_id = v.version_id",
                (tenant_id,),
                limit,
            )

    def mark_keyword_indexed_many(self, version_ids: Sequence[str]) -> None:
        with translated_errors("marking versions indexed"), self.pool.connection() as conn:
            conn.execute(
                "UPDATE source_versions SET keyword_indexed_at = now() WHERE version_id = ANY(%s)",
                (list(version_ids),),
            )

    def batches_to_embed(self, tenant_id: str, model_key: str, limit: int) -> list[ChunkBatch]:
        with translated_errors("listing versions to embed"):
            return self._batches(
                "v.tenant_id = %s AND v.chunked_at IS NOT NULL AND s.state = 'active' "
                "AND s.current_version_id = v.version_id AND NOT EXISTS (SELECT 1 FROM version_models m "
                "WHERE m.version_id = v.version_id AND m.model_key = %s AND m.embedded_at IS NOT NULL)",
                (tenant_id, model_key),
                limit,
            )

    def mark_embedded(self, version_id: str, tenant_id: str, model_key: str) -> None:
        with translated_errors("marking a version embedded"), self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO version_models (version_id, model_key, tenant_id, embedded_at) "
                "VALUES (%s, %s, %s, now()) ON CONFLICT (version_id, model_key) "
                "DO UPDATE SET embedded_at = now()",
                (version_id, model_key, tenant_id),
            )

    def versions_to_publish(self, tenant_id: str, model_key: str) -> list[VersionRecord]:
        with translated_errors("listing versions to publish"), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    f"SELECT {_VERSION_COLUMNS} FROM source_versions v JOIN sources s USING (source_id) "
                    "JOIN version_models m ON m.version_id = v.version_id AND m.model_key = %s "
                    "WHERE v.tenant_id = %s AND s.state = 'active' AND s.current_version_id = v.version_id "
                    "AND v.keyword_indexed_at IS NOT NULL AND m.embedded_at IS NOT NULL "
                    "AND m.published_at IS NULL ORDER BY v.created_at, v.version_id",
                    (model_key, tenant_id),
                )
                .fetchall()
            )
        return [_version(r) for r in rows]

    def mark_published_many(self, version_ids: Sequence[str], model_key: str) -> None:
        with translated_errors("marking versions published"), self.pool.connection() as conn:
            conn.execute(
                "UPDATE version_models SET published_at = now() "
                "WHERE version_id = ANY(%s) AND model_key = %s",
                (list(version_ids), model_key),
            )

    def live_chunk_ids(self, tenant_id: str, model_key: str) -> set[str]:
        with translated_errors("listing live chunks"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT c.chunk_id FROM chunks c JOIN sources s USING (source_id) "
                "JOIN version_models m ON m.version_id = c.version_id AND m.model_key = %s "
                "WHERE c.tenant_id = %s AND s.state = 'active' AND s.current_version_id = c.version_id "
                "AND m.published_at IS NOT NULL",
                (model_key, tenant_id),
            ).fetchall()
        return {r[0] for r in rows}

    def pending_work(self, tenant_id: str, model_key: str) -> dict[str, int]:
        with translated_errors("counting pending work"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT "
                " count(*) FILTER (WHERE v.processing_state IN ('pending', 'extracting')), "
                " count(*) FILTER (WHERE v.processing_state = 'extracted' AND v.chunked_at IS NULL), "
                " count(*) FILTER (WHERE v.chunked_at IS NOT NULL AND v.keyword_indexed_at IS NULL), "
                " count(*) FILTER (WHERE v.chunked_at IS NOT NULL AND (m.embedded_at IS NULL)), "
                " count(*) FILTER (WHERE v.processing_state = 'extracted' AND m.published_at IS NULL) "
                "FROM source_versions v JOIN sources s USING (source_id) "
                "LEFT JOIN version_models m ON m.version_id = v.version_id AND m.model_key = %s "
                "WHERE v.tenant_id = %s AND v.state = 'stored' AND s.state = 'active' "
                "AND s.current_version_id = v.version_id",
                (model_key, tenant_id),
            ).fetchone()
        assert row is not None
        keys = ("extract", "chunk", "keyword_index", "embed", "publish")
        return dict(zip(keys, (int(x) for x in row), strict=True))

    def counts(self, tenant_id: str) -> TenantCounts:
        with translated_errors("counting"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM sources WHERE tenant_id = %(t)s AND state = 'active'), "
                "(SELECT count(*) FROM source_versions WHERE tenant_id = %(t)s), "
                "(SELECT count(*) FROM source_versions WHERE tenant_id = %(t)s "
                "   AND processing_state = 'failed'), "
                "(SELECT count(*) FROM chunks WHERE tenant_id = %(t)s)",
                {"t": tenant_id},
            ).fetchone()
        assert row is not None
        return TenantCounts(*row)

    # reading (ChunkReader) -------------------------------------------------------------
    def has_accessible_sources(self, scope: AccessScope) -> bool:
        if not scope.subjects:
            return False
        with translated_errors("checking access"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT 1 FROM sources WHERE tenant_id = %s AND state = 'active' AND subjects && %s LIMIT 1",
                (scope.tenant_id, list(scope.subjects)),
            ).fetchone()
        return row is not None

    def load_chunks(self, scope: AccessScope, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
        if not chunk_ids or not scope.subjects:
            return {}
        with translated_errors("reading chunks"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT c.chunk_id, c.source_id, c.version_id, coalesce(v.title, s.filename), s.filename, "
                "v.media_type, c.heading_path, c.body, c.location, c.content_hash, c.low_confidence "
                "FROM chunks c JOIN sources s USING (source_id) "
                "JOIN source_versions v ON v.version_id = c.version_id "
                "WHERE c.chunk_id = ANY(%s) AND c.tenant_id = %s AND s.tenant_id = %s "
                "AND s.state = 'active' AND s.subjects && %s",
                (list(chunk_ids), scope.tenant_id, scope.tenant_id, list(scope.subjects)),
            ).fetchall()
        views: dict[str, ChunkView] = {}
        for r in rows:
            location = r[8] if isinstance(r[8], dict) else json.loads(r[8])
            views[r[0]] = ChunkView(
                chunk_id=r[0],
                source_id=r[1],
                version_id=r[2],
                title=r[3],
                filename=r[4],
                media_type=r[5],
                heading_path=tuple(r[6]),
                body=r[7],
                location=Location.from_dict(location),
                content_hash=r[9],
                low_confidence=r[10],
            )
        return views

    def source_status(self, scope: AccessScope, source_id: str) -> dict[str, object] | None:
        """The current version's processing state, if the scope may see the source;
        None both when it does not exist and when it is hidden (no oracle)."""
        if not scope.subjects:
            return None
        with translated_errors("reading a source's status"), self.pool.connection() as conn:
            row = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    "SELECT s.source_id, v.version_id, v.version_no, s.filename, v.media_type, "
                    "v.processing_state, v.failure_reason, v.low_confidence, v.warnings, "
                    "(m.published_at IS NOT NULL) AS published "
                    "FROM sources s JOIN source_versions v ON v.version_id = s.current_version_id "
                    "JOIN tenants t ON t.tenant_id = s.tenant_id "
                    "LEFT JOIN version_models m ON m.version_id = v.version_id AND m.model_key = t.active_model "
                    "WHERE s.source_id = %s AND s.tenant_id = %s AND s.state = 'active' AND s.subjects && %s",
                    (source_id, scope.tenant_id, list(scope.subjects)),
                )
                .fetchone()
            )
        return dict(row) if row else None

    def extraction_of(self, tenant_id: str, version_id: str) -> ExtractedDocument | None:
        """The stored extraction of exactly this version (None if it has none)."""
        with translated_errors("reading an extraction"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT document FROM extracted_documents WHERE version_id = %s AND tenant_id = %s",
                (version_id, tenant_id),
            ).fetchone()
        return ExtractedDocument.from_dict(row[0]) if row else None

    def current_extraction(
        self, scope: AccessScope, source_id: str, version_no: int | None = None
    ) -> tuple[str, ExtractedDocument | ExtractionFailure | None] | None:
        """(version id, what extraction produced) for the source's current version
        (or version `version_no`, which stays readable after a replacement);
        None when the source or version is absent or hidden from the scope."""
        if not scope.subjects:
            return None
        which = (
            "v.version_id = s.current_version_id"
            if version_no is None
            else "v.source_id = s.source_id AND v.version_no = %s AND v.state = 'stored'"
        )
        params: tuple[object, ...] = (source_id, scope.tenant_id, list(scope.subjects))
        if version_no is not None:
            params = (version_no, *params)
        with translated_errors("reading an extraction"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT v.version_id, v.processing_state, v.failure_reason, v.failure_detail, d.document "
                f"FROM sources s JOIN source_versions v ON {which} "
                "LEFT JOIN extracted_documents d ON d.version_id = v.version_id "
                "WHERE s.source_id = %s AND s.tenant_id = %s AND s.state = 'active' AND s.subjects && %s",
                params,
            ).fetchone()
        if row is None:
            return None
        version_id, state, reason, detail, document = row
        if state == "failed":
            return version_id, ExtractionFailure(FailureReason(reason), detail or "")
        if document is None:
            return version_id, None
        return version_id, ExtractedDocument.from_dict(document)

    # sections, citations, drill-down ------------------------------------------------
    def section(self, scope: AccessScope, chunk_id: str) -> list[ChunkView]:
        """The chunks sharing this chunk's heading path in its source version, in order."""
        if not scope.subjects:
            return []
        with translated_errors("reading a section"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT sib.chunk_id FROM chunks c JOIN chunks sib ON sib.source_id = c.source_id "
                "AND sib.version_id = c.version_id AND sib.heading_path = c.heading_path "
                "WHERE c.chunk_id = %s AND c.tenant_id = %s ORDER BY sib.position LIMIT 200",
                (chunk_id, scope.tenant_id),
            ).fetchall()
        views = self.load_chunks(scope, [r[0] for r in rows])
        return [views[r[0]] for r in rows if r[0] in views]

    def record_citations(
        self, scope: AccessScope, key_id: str, citations: Sequence[Citation]
    ) -> list[str]:
        """Store citation snapshots in one statement (this is on the search path); return their ids."""
        if not citations:
            return []
        ids = [f"cit_{uuid.uuid4().hex}" for _ in citations]
        with translated_errors("recording citations"), self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO citations (citation_id, tenant_id, key_id, chunk_id, source_id, version_id, "
                "content_hash, subjects, snapshot) "
                "SELECT c.citation_id, %s, %s, c.chunk_id, c.source_id, c.version_id, c.content_hash, "
                "s.subjects, c.snapshot FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], "
                "%s::text[], %s::jsonb[]) AS c(citation_id, chunk_id, source_id, version_id, content_hash, snapshot) "
                "JOIN sources s ON s.source_id = c.source_id AND s.tenant_id = %s",
                (
                    scope.tenant_id,
                    key_id,
                    ids,
                    [c.chunk_id for c in citations],
                    [c.source_id for c in citations],
                    [c.source_version_id for c in citations],
                    [c.content_hash for c in citations],
                    [Jsonb(c.to_dict()) for c in citations],
                    scope.tenant_id,
                ),
            )
        return ids

    def citation(self, tenant_id: str, citation_id: str) -> dict[str, Any] | None:
        with translated_errors("reading a citation"), self.pool.connection() as conn:
            row = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    "SELECT c.citation_id, c.chunk_id, c.source_id, c.version_id, c.content_hash, c.subjects, "
                    "c.snapshot, s.state AS source_state, s.subjects AS current_subjects, "
                    "ch.content_hash AS current_hash, ch.version_id AS current_version "
                    "FROM citations c LEFT JOIN sources s ON s.source_id = c.source_id "
                    "LEFT JOIN chunks ch ON ch.chunk_id = c.chunk_id "
                    "WHERE c.citation_id = %s AND c.tenant_id = %s",
                    (citation_id, tenant_id),
                )
                .fetchone()
            )
        return dict(row) if row else None

    def record_issued(self, key_id: str, chunk_ids: Sequence[str]) -> None:
        if not chunk_ids or not key_id:
            return
        with translated_errors("recording issued ids"), self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO issued_chunks (key_id, chunk_id) SELECT %s, unnest(%s::text[]) "
                "ON CONFLICT (key_id, chunk_id) DO UPDATE SET issued_at = now()",
                (key_id, list(dict.fromkeys(chunk_ids))),
            )

    def issued_recently(self, key_id: str, hours: int = 24, limit: int = 20) -> list[str]:
        with translated_errors("reading issued ids"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT chunk_id FROM issued_chunks WHERE key_id = %s AND issued_at > now() - make_interval(hours => %s) "
                "ORDER BY issued_at DESC LIMIT %s",
                (key_id, hours, limit),
            ).fetchall()
        return [r[0] for r in rows]

    def was_issued(self, key_id: str, chunk_id: str, hours: int = 24) -> bool:
        with translated_errors("checking an issued id"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT 1 FROM issued_chunks WHERE key_id = %s AND chunk_id = %s "
                "AND issued_at > now() - make_interval(hours => %s)",
                (key_id, chunk_id, hours),
            ).fetchone()
        return row is not None

    def browse(
        self, scope: AccessScope, media_type: str | None, after: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """Sources visible to the scope, by media type then id, keyset-paged."""
        if not scope.subjects:
            return []
        with translated_errors("listing sources"), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    "SELECT s.source_id, s.filename, coalesce(v.title, s.filename) AS title, v.media_type, "
                    "v.processing_state, v.low_confidence, v.created_at "
                    "FROM sources s JOIN source_versions v ON v.version_id = s.current_version_id "
                    "WHERE s.tenant_id = %s AND s.state = 'active' AND s.subjects && %s "
                    "AND (%s::text IS NULL OR v.media_type = %s) AND (%s::text IS NULL OR s.source_id > %s) "
                    "ORDER BY s.source_id LIMIT %s",
                    (
                        scope.tenant_id,
                        list(scope.subjects),
                        media_type,
                        media_type,
                        after,
                        after,
                        limit,
                    ),
                )
                .fetchall()
            )
        return [dict(r) for r in rows]

    def media_type_counts(self, scope: AccessScope) -> dict[str, int]:
        if not scope.subjects:
            return {}
        with translated_errors("counting sources"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT v.media_type, count(*) FROM sources s JOIN source_versions v "
                "ON v.version_id = s.current_version_id WHERE s.tenant_id = %s AND s.state = 'active' "
                "AND s.subjects && %s GROUP BY v.media_type ORDER BY count(*) DESC",
                (scope.tenant_id, list(scope.subjects)),
            ).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def first_chunks(
        self, scope: AccessScope, source_ids: Sequence[str], per_source: int = 5
    ) -> dict[str, list[ChunkView]]:
        """The first chunks of each source's current version (for extractive summaries)."""
        if not source_ids or not scope.subjects:
            return {}
        with translated_errors("reading first chunks"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT c.chunk_id FROM chunks c JOIN sources s USING (source_id) "
                "WHERE c.source_id = ANY(%s) AND c.tenant_id = %s AND s.current_version_id = c.version_id "
                "AND c.position < %s ORDER BY c.source_id, c.position",
                (list(source_ids), scope.tenant_id, per_source),
            ).fetchall()
        views = self.load_chunks(scope, [r[0] for r in rows])
        out: dict[str, list[ChunkView]] = {}
        for r in rows:
            view = views.get(r[0])
            if view is not None:
                out.setdefault(view.source_id, []).append(view)
        return out

    # deletion and permissions -------------------------------------------------------
    def mark_source_deleting(self, tenant_id: str, source_id: str) -> bool:
        """First step of deletion, one statement per table in one transaction, so a
        version registered concurrently is not missed: everything of the source is
        `deleting` and unsearchable from here on."""
        with translated_errors("marking a source for deletion"), self.pool.connection() as conn:
            with conn.transaction():
                row = conn.execute(
                    "UPDATE sources SET state = 'deleting', updated_at = now() "
                    "WHERE source_id = %s AND tenant_id = %s AND state = 'active' RETURNING source_id",
                    (source_id, tenant_id),
                ).fetchone()
                if row is None:
                    return False
                conn.execute(
                    "UPDATE source_versions SET state = 'deleting' WHERE source_id = %s AND state <> 'deleted'",
                    (source_id,),
                )
        return True

    def sources_marked_for_deletion(self, tenant_id: str | None = None) -> list[tuple[str, str]]:
        with translated_errors("listing deletions"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT tenant_id, source_id FROM sources WHERE state = 'deleting' "
                "AND (%s::text IS NULL OR tenant_id = %s) ORDER BY updated_at",
                (tenant_id, tenant_id),
            ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def source_chunk_ids(self, source_id: str) -> list[str]:
        with translated_errors("listing a source's chunks"), self.pool.connection() as conn:
            return [
                r[0]
                for r in conn.execute(
                    "SELECT chunk_id FROM chunks WHERE source_id = %s", (source_id,)
                )
            ]

    def blob_keys_only_used_by(self, source_id: str) -> list[str]:
        """Content-addressed blobs of this source (its versions, and its artifact's
        rendered files) that nothing else live references."""
        with translated_errors("listing blobs"), self.pool.connection() as conn:
            rows = conn.execute(
                "WITH mine AS ("
                "  SELECT blob_key FROM source_versions WHERE source_id = %s"
                "  UNION SELECT f.blob_key FROM artifact_files f JOIN artifacts a USING (artifact_id)"
                "  WHERE a.source_id = %s) "
                "SELECT m.blob_key FROM mine m "
                "WHERE NOT EXISTS (SELECT 1 FROM source_versions o WHERE o.blob_key = m.blob_key "
                "  AND o.source_id <> %s AND o.state IN ('pending', 'stored')) "
                "AND NOT EXISTS (SELECT 1 FROM artifact_files f JOIN artifacts a USING (artifact_id) "
                "  JOIN sources s ON s.source_id = a.source_id "
                "  WHERE f.blob_key = m.blob_key AND a.source_id <> %s AND s.state = 'active')",
                (source_id, source_id, source_id, source_id),
            ).fetchall()
        return [r[0] for r in rows]

    def finish_deletion(
        self, tenant_id: str, source_id: str, tombstones: Sequence[tuple[str, str]]
    ) -> None:
        """Last step: record what was removed where, drop the source's chunks,
        extraction and progress rows, and mark it deleted (the row itself stays,
        so citations still name their source)."""
        with translated_errors("finishing a deletion"), self.pool.connection() as conn:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO tombstones (tenant_id, source_id, chunk_id, store) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    [(tenant_id, source_id, chunk_id, store) for chunk_id, store in tombstones],
                )
                cur.execute("DELETE FROM chunks WHERE source_id = %s", (source_id,))
                cur.execute(
                    "DELETE FROM extracted_documents WHERE version_id IN "
                    "(SELECT version_id FROM source_versions WHERE source_id = %s)",
                    (source_id,),
                )
                cur.execute(
                    "DELETE FROM version_models WHERE version_id IN "
                    "(SELECT version_id FROM source_versions WHERE source_id = %s)",
                    (source_id,),
                )
                # an artifact's rendered files go with its document (their blobs were
                # just deleted); its version history rows stay, hidden with the source
                cur.execute(
                    "DELETE FROM artifact_exports WHERE artifact_id IN "
                    "(SELECT artifact_id FROM artifacts WHERE source_id = %s)",
                    (source_id,),
                )
                cur.execute(
                    "DELETE FROM artifact_files WHERE artifact_id IN "
                    "(SELECT artifact_id FROM artifacts WHERE source_id = %s)",
                    (source_id,),
                )
                cur.execute(
                    "UPDATE source_versions SET state = 'deleted' WHERE source_id = %s",
                    (source_id,),
                )
                cur.execute(
                    "UPDATE sources SET state = 'deleted', current_version_id = NULL, updated_at = now() "
                    "WHERE source_id = %s AND state = 'deleting'",
                    (source_id,),
                )

    def tombstoned_chunk_ids(self, tenant_id: str) -> set[str]:
        with translated_errors("reading tombstones"), self.pool.connection() as conn:
            return {
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT t.chunk_id FROM tombstones t WHERE t.tenant_id = %s AND t.store = 'catalog' "
                    "AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_id = t.chunk_id)",
                    (tenant_id,),
                )
            }

    def set_source_subjects(self, tenant_id: str, source_id: str, subjects: Sequence[str]) -> bool:
        """The catalog's scope changes first: result-time re-checks follow it at
        once, before the indexes' denormalized copies have been updated."""
        with translated_errors("changing a source's scope"), self.pool.connection() as conn:
            row = conn.execute(
                "UPDATE sources SET subjects = %s, updated_at = now() "
                "WHERE source_id = %s AND tenant_id = %s AND state = 'active' RETURNING 1",
                (list(subjects), source_id, tenant_id),
            ).fetchone()
        return row is not None

    def source_subjects(self, tenant_id: str, source_id: str) -> tuple[str, ...] | None:
        with translated_errors("reading a source's scope"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT subjects FROM sources WHERE source_id = %s AND tenant_id = %s AND state = 'active'",
                (source_id, tenant_id),
            ).fetchone()
        return tuple(row[0]) if row else None

    def inbox_origins(self, tenant_id: str) -> dict[str, str]:
        """origin -> source id for the tenant's live inbox sources (the folder connector's mirror)."""
        with translated_errors("listing inbox sources"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT origin, source_id FROM sources WHERE tenant_id = %s AND state = 'active' "
                "AND origin LIKE 'inbox:%%'",
                (tenant_id,),
            ).fetchall()
        return {r[0]: r[1] for r in rows}

    def erase_tenant_rows(self, tenant_id: str) -> None:
        with translated_errors("erasing a tenant"), self.pool.connection() as conn:
            conn.execute("DELETE FROM tenants WHERE tenant_id = %s", (tenant_id,))

    def tenant_blob_keys(self, tenant_id: str) -> list[str]:
        """Blobs referenced by this tenant and by no other tenant."""
        with translated_errors("listing a tenant's blobs"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT DISTINCT v.blob_key FROM source_versions v WHERE v.tenant_id = %s "
                "AND NOT EXISTS (SELECT 1 FROM source_versions o WHERE o.blob_key = v.blob_key AND o.tenant_id <> %s)",
                (tenant_id, tenant_id),
            ).fetchall()
        return [r[0] for r in rows]

    # serving model ----------------------------------------------------------------------
    def switch_serving_model(self, tenant_id: str, model_key: str, expected_current: str) -> bool:
        """Compare-and-set: flips only if the serving model is still `expected_current`."""
        with translated_errors("switching the serving model"), self.pool.connection() as conn:
            row = conn.execute(
                "UPDATE tenants SET previous_model = active_model, active_model = %s, model_switched_at = now() "
                "WHERE tenant_id = %s AND active_model = %s RETURNING 1",
                (model_key, tenant_id, expected_current),
            ).fetchone()
        return row is not None

    def previous_model(self, tenant_id: str) -> str | None:
        with translated_errors("reading the previous model"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT previous_model FROM tenants WHERE tenant_id = %s", (tenant_id,)
            ).fetchone()
        return row[0] if row else None

    def publication_latency(
        self, tenant_id: str, model_key: str, since_seconds: float = 3600
    ) -> list[float]:
        """Seconds from registration to publication, for versions published recently."""
        with translated_errors("reading freshness"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT extract(epoch FROM m.published_at - v.created_at) FROM version_models m "
                "JOIN source_versions v USING (version_id) WHERE m.tenant_id = %s AND m.model_key = %s "
                "AND m.published_at > now() - make_interval(secs => %s)",
                (tenant_id, model_key, since_seconds),
            ).fetchall()
        return [float(r[0]) for r in rows]

    def models_to_retire(self, tenant_id: str, grace_seconds: float) -> list[str]:
        """The model a tenant switched away from, once the rollback grace period is over."""
        with translated_errors("finding retired models"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT previous_model FROM tenants WHERE tenant_id = %s AND previous_model IS NOT NULL "
                "AND previous_model <> active_model AND model_switched_at < now() - make_interval(secs => %s)",
                (tenant_id, grace_seconds),
            ).fetchone()
        return [row[0]] if row else []

    def forget_model(self, tenant_id: str, model_key: str) -> None:
        with translated_errors("retiring a model"), self.pool.connection() as conn:
            with conn.transaction():
                conn.execute(
                    "DELETE FROM version_models WHERE tenant_id = %s AND model_key = %s",
                    (tenant_id, model_key),
                )
                conn.execute(
                    "UPDATE tenants SET previous_model = NULL WHERE tenant_id = %s AND previous_model = %s",
                    (tenant_id, model_key),
                )

    def set_source_tags(self, tenant_id: str, source_id: str, tags: Sequence[str]) -> bool:
        with translated_errors("tagging a source"), self.pool.connection() as conn:
            row = conn.execute(
                "UPDATE sources SET tags = %s, updated_at = now() "
                "WHERE source_id = %s AND tenant_id = %s AND state = 'active' RETURNING 1",
                (sorted(set(tags)), source_id, tenant_id),
            ).fetchone()
        return row is not None

    # upload sessions ------------------------------------------------------------------
    def create_upload(
        self,
        scope: AccessScope,
        key_id: str,
        filename: str,
        size: int,
        declared_type: str,
        subjects: Sequence[str],
        target_source_id: str | None = None,
    ) -> str:
        upload_id = f"upl_{uuid.uuid4().hex}"
        with translated_errors("creating an upload"), self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO upload_sessions (upload_id, tenant_id, key_id, filename, declared_size, "
                "declared_type, subjects, target_source_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    upload_id,
                    scope.tenant_id,
                    key_id,
                    filename,
                    size,
                    declared_type,
                    list(subjects),
                    target_source_id,
                ),
            )
        return upload_id

    def upload(self, tenant_id: str, upload_id: str) -> dict[str, Any] | None:
        with translated_errors("reading an upload"), self.pool.connection() as conn:
            row = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    "SELECT * FROM upload_sessions WHERE upload_id = %s AND tenant_id = %s AND expires_at > now()",
                    (upload_id, tenant_id),
                )
                .fetchone()
            )
        return dict(row) if row else None

    def advance_upload(self, upload_id: str, expected_offset: int, new_offset: int) -> bool:
        """Compare-and-set on the acknowledged offset: a part sent twice, or out of order, loses."""
        with translated_errors("acknowledging an upload part"), self.pool.connection() as conn:
            row = conn.execute(
                "UPDATE upload_sessions SET received = %s WHERE upload_id = %s AND received = %s "
                "AND state = 'open' RETURNING 1",
                (new_offset, upload_id, expected_offset),
            ).fetchone()
        return row is not None

    def finish_upload(
        self, upload_id: str, state: str, source_id: str | None, version_id: str | None
    ) -> None:
        with translated_errors("finishing an upload"), self.pool.connection() as conn:
            conn.execute(
                "UPDATE upload_sessions SET state = %s, source_id = %s, version_id = %s WHERE upload_id = %s",
                (state, source_id, version_id, upload_id),
            )

    # reconciliation ---------------------------------------------------------------------
    def version_blobs(self) -> list[dict[str, Any]]:
        """Every version's blob key, state and age, for reconciliation with the blob store."""
        with translated_errors("listing version blobs"), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    "SELECT version_id, tenant_id, blob_key, state, "
                    "extract(epoch FROM now() - created_at) AS age_seconds FROM source_versions "
                    "UNION ALL SELECT file_id, tenant_id, blob_key, 'stored', "
                    "extract(epoch FROM now() - created_at) FROM artifact_files"
                )
                .fetchall()
            )
        return [dict(r) for r in rows]

    def readable_version(
        self, tenant_id: str, source_id: str, version_id: str
    ) -> tuple[str, str, str] | None:
        """(blob key, filename, media type) if the version exists and is not deleted."""
        with translated_errors("reading a version"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT v.blob_key, s.filename, v.media_type FROM source_versions v JOIN sources s USING (source_id) "
                "WHERE v.version_id = %s AND v.source_id = %s AND v.tenant_id = %s AND v.state = 'stored' "
                "AND s.state = 'active'",
                (version_id, source_id, tenant_id),
            ).fetchone()
        return (row[0], row[1], row[2]) if row else None
