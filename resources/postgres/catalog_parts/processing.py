"""Extraction, chunking and index progress: what each stage still has to do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import Cursor
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from groundwork.catalog import (
    ChunkBatch,
    TenantCounts,
    TenantWork,
    VersionRecord,
    VersionShard,
)
from groundwork.chunking import Chunk
from groundwork.documents import ExtractedDocument, ExtractionFailure, FailureReason
from groundwork.ports import IndexedChunk
from resources.postgres.catalog_parts.common import (
    VERSION_COLUMNS,
    StoreBase,
    select_versions,
    version_record,
)
from resources.postgres.database import translated_errors

#: what each stage still has to do among a tenant's current versions (`v`, with
#: the model's progress row `m`): one definition for the per-tenant count and
#: the all-tenants read the sensor makes
_STAGES = ("extract", "chunk", "summarize", "keyword_index", "embed", "publish")
_STAGE_COUNTS = (
    "count(*) FILTER (WHERE v.processing_state IN ('pending', 'extracting')), "
    "count(*) FILTER (WHERE v.processing_state = 'extracted' AND v.chunked_at IS NULL), "
    "count(*) FILTER (WHERE v.processing_state = 'extracted' AND v.chunked_at IS NOT NULL "
    "  AND v.summarized_at IS NULL), "
    "count(*) FILTER (WHERE v.processing_state = 'extracted' AND v.summarized_at IS NOT NULL "
    "  AND v.keyword_indexed_at IS NULL), "
    "count(*) FILTER (WHERE v.processing_state = 'extracted' AND v.summarized_at IS NOT NULL "
    "  AND m.embedded_at IS NULL), "
    "count(*) FILTER (WHERE v.processing_state = 'extracted' AND m.published_at IS NULL)"
)

#: groundwork.catalog.version_bucket in SQL: the low 31 bits of md5's first 4 bytes
_BUCKET = "((('x' || substr(md5(v.version_id::text), 1, 8))::bit(32)::int & 2147483647) %% %s)"


def in_shard(shard: VersionShard | None) -> tuple[str, tuple[int, ...]]:
    if shard is None:
        return "", ()
    return f" AND {_BUCKET} = %s", (shard.count, shard.index)


def write_chunk_rows(cur: Cursor[Any], chunks: Sequence[Chunk]) -> None:
    """Upsert chunk rows (either layer); one statement for the raw chunks and
    the summary page. A raw chunk names its section (parent_id, migration
    0038), derived in SQL from its version and heading path; the section rows
    themselves are rebuilt by `groundwork_link_sections` (replace_chunks)."""
    cur.executemany(
        "INSERT INTO chunks (chunk_id, tenant_id, source_id, version_id, position, "
        "heading_path, body, kind, location, content_hash, token_count, low_confidence, layer, "
        "parent_id) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
        "CASE WHEN %s = 'raw' THEN groundwork_section_id(%s, %s::text[]) END) "
        "ON CONFLICT (chunk_id) DO UPDATE SET version_id = excluded.version_id, "
        "heading_path = excluded.heading_path, body = excluded.body, kind = excluded.kind, "
        "location = excluded.location, content_hash = excluded.content_hash, "
        "token_count = excluded.token_count, low_confidence = excluded.low_confidence, "
        "layer = excluded.layer, parent_id = excluded.parent_id, updated_at = now()",
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
                c.layer,
                c.layer,
                c.version_id,
                list(c.heading_path),
            )
            # one lock order for every writer: concurrent upserts never deadlock
            for c in sorted(chunks, key=lambda c: c.chunk_id)
        ],
    )


class Processing(StoreBase):
    # extraction ----------------------------------------------------------------------
    def versions_to_extract(
        self, tenant_id: str, limit: int, shard: VersionShard | None = None
    ) -> list[VersionRecord]:
        where, params = in_shard(shard)
        with translated_errors("listing versions to extract"), self.pool.connection() as conn:
            return select_versions(
                conn,
                "WHERE v.tenant_id = %s AND v.state = 'stored' AND s.state = 'active' "
                "AND s.current_version_id = v.version_id "
                "AND (v.processing_state = 'pending' OR (v.processing_state = 'extracting' "
                "     AND v.extracted_at IS NULL))" + where + " "
                "ORDER BY v.created_at, v.version_id LIMIT %s",
                (tenant_id, *params, limit),
            )

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

    def mark_version_failed(self, version_id: str, reason: FailureReason, detail: str) -> None:
        """After extraction: a store refused the version's text. It leaves every
        stage's work list (they all require processing_state = 'extracted')."""
        with translated_errors("marking a version failed"), self.pool.connection() as conn:
            conn.execute(
                "UPDATE source_versions SET processing_state = 'failed', failure_reason = %s, "
                "failure_detail = %s WHERE version_id = %s",
                (reason.value, detail[:2000], version_id),
            )

    # chunking ------------------------------------------------------------------------
    def versions_to_chunk(
        self, tenant_id: str, limit: int, shard: VersionShard | None = None
    ) -> list[tuple[VersionRecord, ExtractedDocument]]:
        where, params = in_shard(shard)
        with translated_errors("listing versions to chunk"), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    f"SELECT {VERSION_COLUMNS}, d.document FROM source_versions v "
                    "JOIN sources s USING (source_id) JOIN extracted_documents d USING (version_id) "
                    "WHERE v.tenant_id = %s AND v.processing_state = 'extracted' AND v.chunked_at IS NULL "
                    "AND s.state = 'active' AND s.current_version_id = v.version_id"
                    + where
                    + " ORDER BY v.created_at, v.version_id LIMIT %s",
                    (tenant_id, *params, limit),
                )
                .fetchall()
            )
        return [(version_record(r), ExtractedDocument.from_dict(r["document"])) for r in rows]

    def replace_chunks(self, version: VersionRecord, chunks: Sequence[Chunk]) -> None:
        with translated_errors("writing chunks"), self.pool.connection() as conn:
            with conn.transaction():
                with conn.cursor() as cur:
                    write_chunk_rows(cur, chunks)
                # Only this version's own raw rows past its new length (a re-chunk
                # of the same version); other versions' rows, the published one
                # above all, are never touched here, nor its summary page.
                conn.execute(
                    "DELETE FROM chunks WHERE version_id = %s AND layer = 'raw' AND position >= %s",
                    (version.version_id, len(chunks)),
                )
                # the version's sections (the parents), rebuilt from its children
                conn.execute("SELECT groundwork_link_sections(%s)", (version.version_id,))
                conn.execute(
                    "UPDATE source_versions SET chunked_at = now() WHERE version_id = %s",
                    (version.version_id,),
                )

    # indexes -------------------------------------------------------------------------
    def _batches(self, where: str, params: tuple[object, ...], limit: int) -> list[ChunkBatch]:
        with self.pool.connection() as conn:
            versions = select_versions(
                conn,
                f"WHERE {where} ORDER BY v.created_at, v.version_id LIMIT %s",
                (*params, limit),
            )
            batches: list[ChunkBatch] = []
            for version in versions:
                rows = (
                    conn.cursor(row_factory=dict_row)
                    .execute(
                        # the source's doc_type rides on every index row (migration 0033)
                        "SELECT c.chunk_id, c.heading_path, c.body, c.content_hash, c.layer, "
                        "s.doc_type FROM chunks c JOIN sources s USING (source_id) "
                        "WHERE c.source_id = %s AND c.version_id = %s ORDER BY c.layer, c.position",
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
                        layer=r["layer"],
                        document_type="artifact" if r["doc_type"] == "artifact" else "source",
                    )
                    for r in rows
                )
                batches.append(ChunkBatch(version, indexed))
        return batches

    def batches_to_keyword_index(
        self, tenant_id: str, limit: int, shard: VersionShard | None = None
    ) -> list[ChunkBatch]:
        where, params = in_shard(shard)
        with translated_errors("listing versions to index"):
            return self._batches(
                # summarized: both layers of a version go into the indexes together
                "v.tenant_id = %s AND v.summarized_at IS NOT NULL AND v.keyword_indexed_at IS NULL "
                "AND v.processing_state = 'extracted' "
                "AND s.state = 'active' AND s.current_version_id = v.version_id" + where,
                (tenant_id, *params),
                limit,
            )

    def version_batch(self, version_id: str) -> ChunkBatch | None:
        with translated_errors("reading a version's chunks"):
            found = self._batches(
                "v.version_id = %s AND v.state = 'stored' AND s.state = 'active' "
                "AND s.current_version_id = v.version_id",
                (version_id,),
                1,
            )
        return found[0] if found else None

    def mark_keyword_indexed_many(self, version_ids: Sequence[str]) -> None:
        with translated_errors("marking versions indexed"), self.pool.connection() as conn:
            conn.execute(
                "UPDATE source_versions SET keyword_indexed_at = now() WHERE version_id = ANY(%s)",
                (list(version_ids),),
            )

    def batches_to_embed(
        self, tenant_id: str, model_key: str, limit: int, shard: VersionShard | None = None
    ) -> list[ChunkBatch]:
        where, params = in_shard(shard)
        with translated_errors("listing versions to embed"):
            return self._batches(
                "v.tenant_id = %s AND v.summarized_at IS NOT NULL AND s.state = 'active' "
                "AND v.processing_state = 'extracted' "
                "AND s.current_version_id = v.version_id AND NOT EXISTS (SELECT 1 FROM version_models m "
                "WHERE m.version_id = v.version_id AND m.model_key = %s AND m.embedded_at IS NOT NULL)"
                + where,
                (tenant_id, model_key, *params),
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
            return select_versions(
                conn,
                "JOIN version_models m ON m.version_id = v.version_id AND m.model_key = %s "
                "WHERE v.tenant_id = %s AND s.state = 'active' AND s.current_version_id = v.version_id "
                "AND v.keyword_indexed_at IS NOT NULL AND m.embedded_at IS NOT NULL "
                "AND v.processing_state = 'extracted' "
                "AND m.published_at IS NULL ORDER BY v.created_at, v.version_id",
                (model_key, tenant_id),
            )

    def mark_published_many(self, version_ids: Sequence[str], model_key: str) -> None:
        """The publication switch: in one transaction, each version becomes the
        one its source serves for `model_key` (a pointer never moves back to an
        older version). Every read of chunk text joins this pointer, so searches
        see the previous version whole until this commits, and this one after."""
        with translated_errors("marking versions published"), self.pool.connection() as conn:
            with conn.transaction():
                conn.execute(
                    "UPDATE version_models SET published_at = now() "
                    "WHERE version_id = ANY(%s) AND model_key = %s",
                    (sorted(version_ids), model_key),
                )
                conn.execute(
                    "INSERT INTO published_versions (tenant_id, source_id, model_key, version_id) "
                    "SELECT v.tenant_id, v.source_id, %s, v.version_id FROM source_versions v "
                    "WHERE v.version_id = ANY(%s) ORDER BY v.source_id "
                    "ON CONFLICT (source_id, model_key) DO UPDATE SET version_id = excluded.version_id, "
                    "previous_version_id = CASE WHEN published_versions.version_id = excluded.version_id "
                    "THEN published_versions.previous_version_id ELSE published_versions.version_id END, "
                    "published_at = now() WHERE (SELECT version_no FROM source_versions "
                    "WHERE version_id = published_versions.version_id) <= (SELECT version_no "
                    "FROM source_versions WHERE version_id = excluded.version_id)",
                    (model_key, sorted(version_ids)),
                )

    def superseded_versions(self, tenant_id: str, model_key: str | None) -> list[str]:
        """Versions whose rows may leave the indexes: they still have chunk rows
        but are neither a source's current version nor published (for
        `model_key`, or for any model when None)."""
        published = (
            "p.version_id = c.version_id"
            if model_key is None
            else "p.version_id = c.version_id AND p.model_key = %s"
        )
        params: tuple[object, ...] = (tenant_id,) if model_key is None else (model_key, tenant_id)
        with translated_errors("listing superseded versions"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT DISTINCT c.version_id FROM chunks c JOIN sources s USING (source_id) "
                f"WHERE NOT EXISTS (SELECT 1 FROM published_versions p WHERE {published}) "
                "AND c.tenant_id = %s AND s.state = 'active' "
                "AND c.version_id IS DISTINCT FROM s.current_version_id ORDER BY 1",
                params,
            ).fetchall()
        return [r[0] for r in rows]

    def drop_version_chunks(
        self, tenant_id: str, version_ids: Sequence[str], grace_seconds: float
    ) -> int:
        """Chunk rows go last, after the indexes: they are what marks a version
        as still to be swept, so a crash in between is finished by the next run.
        A version a pointer left less than `grace_seconds` ago keeps its rows
        (searches in flight at the switch re-check against them)."""
        if not version_ids:
            return 0
        with translated_errors("dropping superseded chunks"), self.pool.connection() as conn:
            with conn.transaction():
                dropped = conn.execute(
                    "DELETE FROM chunks c WHERE c.tenant_id = %s AND c.version_id = ANY(%s) "
                    "AND NOT EXISTS (SELECT 1 FROM published_versions p WHERE "
                    "p.previous_version_id = c.version_id "
                    "AND p.published_at > now() - make_interval(secs => %s))",
                    (tenant_id, sorted(version_ids), grace_seconds),
                ).rowcount
                # sections go with the last of their children
                conn.execute(
                    "DELETE FROM chunk_sections s WHERE s.tenant_id = %s "
                    "AND s.version_id = ANY(%s) AND NOT EXISTS "
                    "(SELECT 1 FROM chunks c WHERE c.version_id = s.version_id "
                    "AND c.parent_id = s.section_id)",
                    (tenant_id, sorted(version_ids)),
                )
            return dropped

    def live_chunk_ids(self, tenant_id: str, model_key: str | None) -> set[str]:
        """Chunks of the versions published for `model_key` (for any model when
        None: the keyword index is shared by every model's publication)."""
        model_clause = "" if model_key is None else "AND p.model_key = %s "
        params: tuple[object, ...] = (tenant_id,) if model_key is None else (tenant_id, model_key)
        with translated_errors("listing live chunks"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT DISTINCT c.chunk_id FROM chunks c JOIN sources s USING (source_id) "
                "JOIN published_versions p ON p.version_id = c.version_id "
                f"WHERE c.tenant_id = %s AND s.state = 'active' {model_clause}",
                params,
            ).fetchall()
        return {r[0] for r in rows}

    def pending_work(self, tenant_id: str, model_key: str) -> dict[str, int]:
        with translated_errors("counting pending work"), self.pool.connection() as conn:
            row = conn.execute(
                f"SELECT {_STAGE_COUNTS} "
                "FROM source_versions v JOIN sources s USING (source_id) "
                "LEFT JOIN version_models m ON m.version_id = v.version_id AND m.model_key = %s "
                "WHERE v.tenant_id = %s AND v.state = 'stored' AND s.state = 'active' "
                "AND s.current_version_id = v.version_id",
                (model_key, tenant_id),
            ).fetchone()
        assert row is not None
        return dict(zip(_STAGES, (int(x) for x in row), strict=True))

    def pending_work_all(self) -> list[TenantWork]:
        with translated_errors("counting pending work"), self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT v.tenant_id, t.active_model, {_STAGE_COUNTS}, "
                "extract(epoch FROM max(v.created_at)), extract(epoch FROM min(v.created_at)) "
                "FROM source_versions v JOIN sources s USING (source_id) "
                "JOIN tenants t ON t.tenant_id = v.tenant_id "
                "LEFT JOIN version_models m ON m.version_id = v.version_id "
                "AND m.model_key = t.active_model "
                "WHERE v.state = 'stored' AND s.state = 'active' "
                "AND s.current_version_id = v.version_id "
                "AND (v.processing_state IN ('pending', 'extracting') "
                "  OR (v.processing_state = 'extracted' AND (v.chunked_at IS NULL "
                "      OR v.summarized_at IS NULL "
                "      OR v.keyword_indexed_at IS NULL OR m.embedded_at IS NULL "
                "      OR m.published_at IS NULL))) "
                "GROUP BY v.tenant_id, t.active_model ORDER BY v.tenant_id"
            ).fetchall()
        return [
            TenantWork(
                r[0],
                r[1],
                dict(zip(_STAGES, (int(x) for x in r[2 : 2 + len(_STAGES)]), strict=True)),
                float(r[2 + len(_STAGES)]),
                float(r[3 + len(_STAGES)]),
            )
            for r in rows
        ]

    def counts(self, tenant_id: str) -> TenantCounts:
        with translated_errors("counting"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM sources WHERE tenant_id = %(t)s AND state = 'active'), "
                "(SELECT count(*) FROM source_versions WHERE tenant_id = %(t)s), "
                "(SELECT count(*) FROM source_versions WHERE tenant_id = %(t)s "
                "   AND processing_state = 'failed'), "
                # the documents' own chunks (a summary page is counted by the summary stage)
                "(SELECT count(*) FROM chunks WHERE tenant_id = %(t)s AND layer = 'raw')",
                {"t": tenant_id},
            ).fetchone()
        assert row is not None
        return TenantCounts(*row)

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

    def oldest_unpublished_seconds(self, tenant_id: str, model_key: str) -> float:
        """How long the oldest current, stored, processable version has waited
        without being published for `model_key` (0 when nothing waits): the
        staleness a searcher can observe. Failed versions are not waiting."""
        with translated_errors("reading staleness"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT coalesce(max(extract(epoch FROM now() - v.created_at)), 0) "
                "FROM source_versions v JOIN sources s ON s.current_version_id = v.version_id "
                "WHERE v.tenant_id = %s AND s.state = 'active' AND v.state = 'stored' "
                "AND v.processing_state <> 'failed' AND NOT EXISTS (SELECT 1 FROM "
                "published_versions p WHERE p.version_id = v.version_id AND p.model_key = %s)",
                (tenant_id, model_key),
            ).fetchone()
        return float(row[0]) if row else 0.0
