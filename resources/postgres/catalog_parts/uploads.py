"""Upload sessions and reconciliation's view of versions and blobs."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from psycopg.rows import dict_row

from groundwork.ports import AccessScope
from resources.postgres.catalog_parts.common import StoreBase
from resources.postgres.database import translated_errors


class UploadsAndBlobs(StoreBase):
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

    def cancel_upload(self, upload_id: str) -> bool:
        with translated_errors("cancelling an upload"), self.pool.connection() as conn:
            row = conn.execute(
                "UPDATE upload_sessions SET state = 'cancelled' WHERE upload_id = %s "
                "AND state = 'open' RETURNING 1",
                (upload_id,),
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
