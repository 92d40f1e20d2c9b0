"""The summary layer's progress and records (SummaryLedger)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from groundwork.catalog import SummaryDrift, VersionRecord, VersionShard
from groundwork.chunking import Chunk
from groundwork.documents import Location
from groundwork.ports import AccessScope
from groundwork.summaries import CompiledSummary, RawChunk
from resources.postgres.catalog_parts.common import (
    StoreBase,
    select_versions,
)
from resources.postgres.catalog_parts.processing import in_shard, write_chunk_rows
from resources.postgres.database import translated_errors

#: groundwork.summaries.raw_digest in SQL: sha256 over `id:hash` lines in
#: chunk-id byte order (COLLATE "C"), over the version's raw chunks
_RAW_DIGEST = (
    "encode(sha256(convert_to(coalesce(string_agg(c.chunk_id || ':' || c.content_hash, "
    "E'\\n' ORDER BY c.chunk_id COLLATE \"C\"), ''), 'UTF8')), 'hex')"
)


class Summaries(StoreBase):
    def versions_to_summarize(
        self, tenant_id: str, limit: int, shard: VersionShard | None = None
    ) -> list[tuple[VersionRecord, list[RawChunk]]]:
        where, params = in_shard(shard)
        with translated_errors("listing versions to summarize"), self.pool.connection() as conn:
            versions = select_versions(
                conn,
                "WHERE v.tenant_id = %s AND v.processing_state = 'extracted' "
                "AND v.chunked_at IS NOT NULL AND v.summarized_at IS NULL "
                "AND s.state = 'active' AND s.current_version_id = v.version_id"
                + where
                + " ORDER BY v.created_at, v.version_id LIMIT %s",
                (tenant_id, *params, limit),
            )
            if not versions:
                return []
            rows = conn.execute(
                "SELECT version_id, chunk_id, position, heading_path, body, content_hash, location "
                "FROM chunks WHERE version_id = ANY(%s) AND layer = 'raw' "
                "ORDER BY version_id, position",
                ([v.version_id for v in versions],),
            ).fetchall()
        raw: dict[str, list[RawChunk]] = {}
        for r in rows:
            location = r[6] if isinstance(r[6], dict) else json.loads(r[6])
            raw.setdefault(r[0], []).append(
                RawChunk(r[1], int(r[2]), tuple(r[3]), r[4], r[5], Location.from_dict(location))
            )
        return [(v, raw.get(v.version_id, [])) for v in versions]

    def save_summary(
        self, version: VersionRecord, summary: CompiledSummary, chunks: Sequence[Chunk]
    ) -> None:
        with translated_errors("saving a summary"), self.pool.connection() as conn:
            with conn.transaction():
                with conn.cursor() as cur:
                    write_chunk_rows(cur, chunks)
                conn.execute(
                    "DELETE FROM chunks WHERE version_id = %s AND layer = 'summary' "
                    "AND position >= %s",
                    (version.version_id, len(chunks)),
                )
                conn.execute(
                    "INSERT INTO version_summaries (version_id, tenant_id, source_id, kind, model, "
                    "pointers, raw_digest) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (version_id) DO UPDATE SET kind = excluded.kind, "
                    "model = excluded.model, pointers = excluded.pointers, "
                    "raw_digest = excluded.raw_digest, compiled_at = now(), stale_since = NULL, "
                    "stale_reason = NULL",
                    (
                        version.version_id,
                        version.tenant_id,
                        version.source_id,
                        summary.kind,
                        summary.model,
                        list(summary.pointers),
                        summary.raw_digest,
                    ),
                )
                # A version the indexes already took goes through them again for
                # its new page; its published pointer stays, so it is served as
                # it was until publication flips the new page live.
                conn.execute(
                    "UPDATE source_versions SET summarized_at = now(), keyword_indexed_at = NULL "
                    "WHERE version_id = %s",
                    (version.version_id,),
                )
                conn.execute(
                    "UPDATE version_models SET embedded_at = NULL, published_at = NULL "
                    "WHERE version_id = %s",
                    (version.version_id,),
                )

    def summary_drift(self, tenant_id: str) -> list[SummaryDrift]:
        with translated_errors("checking summary drift"), self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT m.version_id, m.source_id, m.raw_digest, {_RAW_DIGEST} AS current "
                "FROM version_summaries m "
                "JOIN sources s ON s.source_id = m.source_id "
                "AND s.current_version_id = m.version_id AND s.state = 'active' "
                "JOIN source_versions v ON v.version_id = m.version_id "
                "LEFT JOIN chunks c ON c.version_id = m.version_id AND c.layer = 'raw' "
                "WHERE m.tenant_id = %s AND m.stale_since IS NULL "
                "AND v.summarized_at IS NOT NULL "
                "GROUP BY m.version_id, m.source_id, m.raw_digest "
                f"HAVING m.raw_digest <> {_RAW_DIGEST} ORDER BY m.version_id",
                (tenant_id,),
            ).fetchall()
        return [SummaryDrift(r[0], r[1], r[2], r[3]) for r in rows]

    def mark_summaries_stale(self, tenant_id: str, version_ids: Sequence[str], reason: str) -> int:
        if not version_ids:
            return 0
        with translated_errors("marking summaries stale"), self.pool.connection() as conn:
            with conn.transaction():
                marked = conn.execute(
                    "UPDATE version_summaries SET stale_since = now(), stale_reason = %s "
                    "WHERE tenant_id = %s AND version_id = ANY(%s) AND stale_since IS NULL",
                    (reason, tenant_id, sorted(version_ids)),
                ).rowcount
                conn.execute(
                    "UPDATE source_versions SET summarized_at = NULL "
                    "WHERE tenant_id = %s AND version_id = ANY(%s)",
                    (tenant_id, sorted(version_ids)),
                )
        return marked

    def compiled_summary_count(self, tenant_id: str) -> int:
        with translated_errors("counting compiled summaries"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT count(*) FROM version_summaries m "
                "JOIN sources s ON s.source_id = m.source_id "
                "AND s.current_version_id = m.version_id AND s.state = 'active' "
                "WHERE m.tenant_id = %s",
                (tenant_id,),
            ).fetchone()
        return int(row[0]) if row else 0

    def compiled_summaries(
        self, scope: AccessScope, source_ids: Sequence[str]
    ) -> dict[str, CompiledSummary]:
        if not source_ids or not scope.subjects:
            return {}
        with translated_errors("reading compiled summaries"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT m.source_id, m.version_id, coalesce(v.title, s.filename), m.kind, m.model, "
                "m.pointers, m.raw_digest, m.stale_since IS NOT NULL, "
                "coalesce(string_agg(c.body, ' ' ORDER BY c.position), ''), v.media_type "
                "FROM version_summaries m JOIN sources s ON s.source_id = m.source_id "
                "JOIN source_versions v ON v.version_id = m.version_id "
                "JOIN tenants t ON t.tenant_id = s.tenant_id "
                "JOIN published_versions p ON p.source_id = m.source_id "
                "AND p.version_id = m.version_id AND p.model_key = t.active_model "
                "LEFT JOIN chunks c ON c.version_id = m.version_id AND c.layer = 'summary' "
                "WHERE m.source_id = ANY(%s) AND m.tenant_id = %s AND s.tenant_id = %s "
                "AND s.state = 'active' AND groundwork_readable(s.subjects, %s) "
                "GROUP BY m.source_id, m.version_id, v.title, s.filename, m.kind, m.model, "
                "m.pointers, m.raw_digest, m.stale_since, v.media_type",
                (list(source_ids), scope.tenant_id, scope.tenant_id, list(scope.subjects)),
            ).fetchall()
        return {
            r[0]: CompiledSummary(
                source_id=r[0],
                version_id=r[1],
                title=r[2],
                kind=r[3],
                model=r[4],
                text=r[8],
                pointers=tuple(r[5]),
                raw_digest=r[6],
                stale=bool(r[7]),
                media_type=r[9],
            )
            for r in rows
        }
