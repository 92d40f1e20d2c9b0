"""Deletion, permissions, tags and the serving model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from psycopg.types.json import Jsonb

from resources.postgres.catalog_parts.common import StoreBase
from resources.postgres.database import translated_errors


class Lifecycle(StoreBase):
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
        so citations still name their source).

        Erasure removes every copy of the text: citation snapshots keep their
        ids, hash and location (a citation still resolves, as `removed`) but lose
        the excerpt and heading path, and their title becomes the filename (an
        extracted title is document text); versions lose their extracted title,
        warnings and failure detail. Eval runs store scores, ids and reason codes,
        no document text."""
        with translated_errors("finishing a deletion"), self.pool.connection() as conn:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO tombstones (tenant_id, source_id, chunk_id, store) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    # sorted: one lock order for every writer, so concurrent upserts never deadlock
                    [
                        (tenant_id, source_id, chunk_id, store)
                        for chunk_id, store in sorted(tombstones)
                    ],
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
                # the summary layer's records go with its chunks (just deleted above)
                cur.execute("DELETE FROM version_summaries WHERE source_id = %s", (source_id,))
                # and the overview page's line about it (its title and lead are document
                # text); the page itself is recompiled by the overview stage's next run
                cur.execute("DELETE FROM overview_statements WHERE source_id = %s", (source_id,))
                # the sections (chunk parents) hold heading paths: document text too
                cur.execute("DELETE FROM chunk_sections WHERE source_id = %s", (source_id,))
                cur.execute(
                    "UPDATE source_versions SET summarized_at = NULL WHERE source_id = %s",
                    (source_id,),
                )
                # an artifact's rendered files go with its document (their blobs were
                # just deleted); its version history rows stay, hidden with the source,
                # without their summaries (text of the document)
                cur.execute(
                    "UPDATE artifact_versions SET summary = '{}' WHERE artifact_id IN "
                    "(SELECT artifact_id FROM artifacts WHERE source_id = %s)",
                    (source_id,),
                )
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
                # every tenant's snapshots of it: a system corpus source is cited
                # by the tenants that read it, each citation its own tenant's row
                # (source ids are global, so this reaches no other source's)
                cur.execute(
                    "UPDATE citation_snapshots c SET snapshot = (c.snapshot - 'excerpt' "
                    "  - 'heading_path' - 'title') || jsonb_build_object('excerpt', '', "
                    "  'heading_path', '[]'::jsonb, 'title', s.filename, 'erased', true) "
                    "FROM sources s WHERE s.source_id = c.source_id "
                    "AND c.source_id = %s AND s.tenant_id = %s",
                    (source_id, tenant_id),
                )
                cur.execute(
                    "UPDATE source_versions SET state = 'deleted', title = NULL, warnings = '{}', "
                    "failure_detail = NULL WHERE source_id = %s",
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

    def inbox_sources(self, tenant_id: str) -> dict[str, tuple[str, tuple[str, ...]]]:
        """origin -> (source id, subjects) for the tenant's live inbox sources
        (the folder connector's mirror)."""
        with translated_errors("listing inbox sources"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT origin, source_id, subjects FROM sources WHERE tenant_id = %s "
                "AND state = 'active' AND origin LIKE 'inbox:%%'",
                (tenant_id,),
            ).fetchall()
        return {r[0]: (r[1], tuple(r[2])) for r in rows}

    def record_inbox_scan(self, tenant_id: str, fingerprint: str, rescan_wanted: bool) -> None:
        """The folder connector's last walk (migration 0043)."""
        with translated_errors("recording an inbox scan"), self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO inbox_scans (tenant_id, fingerprint, rescan_wanted) "
                "VALUES (%s, %s, %s) ON CONFLICT (tenant_id) DO UPDATE SET "
                "fingerprint = EXCLUDED.fingerprint, rescan_wanted = EXCLUDED.rescan_wanted, "
                "scanned_at = now()",
                (tenant_id, fingerprint, rescan_wanted),
            )

    def inbox_scans(self, tenant_ids: Sequence[str]) -> dict[str, tuple[str, bool]]:
        with translated_errors("reading inbox scans"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT tenant_id, fingerprint, rescan_wanted FROM inbox_scans "
                "WHERE tenant_id = ANY(%s)",
                (list(tenant_ids),),
            ).fetchall()
        return {r[0]: (r[1], bool(r[2])) for r in rows}

    def erase_tenant_rows(self, tenant_id: str) -> None:
        """Every row of the tenant goes with its `tenants` row (foreign keys,
        ON DELETE CASCADE), and in the same statement the ids its keys were
        handed (`issued_chunks` names the key alone, so no cascade reaches it:
        its rows outlived the tenant, each chunk id its keys were issued)."""
        with translated_errors("erasing a tenant"), self.pool.connection() as conn:
            conn.execute(
                "WITH issued AS (DELETE FROM issued_chunks WHERE key_id IN "
                "(SELECT key_id FROM api_keys WHERE tenant_id = %(tenant)s)) "
                "DELETE FROM tenants WHERE tenant_id = %(tenant)s",
                {"tenant": tenant_id},
            )

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
        """The retired model's progress and its publication pointers go. A
        pointer left behind kept counting as "published": the version it named
        was never superseded, so its chunk rows and keyword documents stayed
        for good, and the model looked live with no vectors behind it."""
        with translated_errors("retiring a model"), self.pool.connection() as conn:
            with conn.transaction():
                conn.execute(
                    "DELETE FROM version_models WHERE tenant_id = %s AND model_key = %s",
                    (tenant_id, model_key),
                )
                conn.execute(
                    "DELETE FROM published_versions WHERE tenant_id = %s AND model_key = %s",
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

    def relocate_source(
        self, tenant_id: str, source_id: str, filename: str, location: Mapping[str, str]
    ) -> bool:
        with translated_errors("relocating a source"), self.pool.connection() as conn:
            with conn.transaction():
                row = conn.execute(
                    "UPDATE sources SET filename = %s, updated_at = now() "
                    "WHERE source_id = %s AND tenant_id = %s AND state = 'active' "
                    "RETURNING current_version_id",
                    (filename, source_id, tenant_id),
                ).fetchone()
                if row is None:
                    return False
                conn.execute(
                    "UPDATE source_versions SET source_location = %s "
                    "WHERE version_id = %s AND tenant_id = %s",
                    (Jsonb(dict(location)), row[0], tenant_id),
                )
        return True
