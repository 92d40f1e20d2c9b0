"""The VectorIndex port on pgvector: one table and HNSW index per model.

Authorization (tenant, subjects), liveness and metadata filters are in the
WHERE clause of the nearest-neighbour query itself; `hnsw.iterative_scan`
keeps scanning the graph until enough rows pass the filter, so a selective
filter still returns `limit` rows instead of fewer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from psycopg import sql

from groundwork.errors import DimensionMismatch, StoreError
from groundwork.models import EmbeddingModelRef
from groundwork.ports import AccessScope, ScoredChunk, SearchFilters, VectorRecord
from resources.postgres.chunk_rows import ChunkRowTable, filter_conditions
from resources.postgres.database import document_refusals, translated_errors
from resources.postgres.tenant_wall import ConnectionSource


class PgVectorIndex(ChunkRowTable):
    def __init__(
        self, pool: ConnectionSource, model: EmbeddingModelRef, ef_search: int = 100
    ) -> None:
        super().__init__(pool, f"embeddings_{model.key}")
        self._model = model
        self.ef_search = ef_search

    @property
    def model(self) -> EmbeddingModelRef:
        return self._model

    def ensure_schema(self) -> None:
        with translated_errors("checking the vector table"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) "
                "AND attname = 'embedding'",
                (f"embeddings_{self._model.key}",),
            ).fetchone()
        if row is None:
            raise StoreError(
                f"no vector table for model {self._model.key}; add a migration creating "
                f"embeddings_{self._model.key} (see resources/migrations/0002_vectors.sql)"
            )
        if row[0] != self._model.dimension:
            raise DimensionMismatch(
                f"table embeddings_{self._model.key} holds {row[0]}-dim vectors; "
                f"model {self._model.key} produces {self._model.dimension}"
            )

    def _check(self, vector: Sequence[float]) -> None:
        if len(vector) != self._model.dimension:
            raise DimensionMismatch(
                f"vector has {len(vector)} dimensions; model {self._model.key} has {self._model.dimension}"
            )

    def upsert(self, records: Sequence[VectorRecord]) -> int:
        for record in records:
            self._check(record.vector)
        if not records:
            return 0
        query = sql.SQL(
            "INSERT INTO {} (chunk_id, tenant_id, source_id, version_id, subjects, media_type, "
            "content_hash, live, embedding, tags, source_date) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, false, %s, %s, %s) "
            "ON CONFLICT (chunk_id) DO UPDATE SET tenant_id = excluded.tenant_id, "
            "source_id = excluded.source_id, version_id = excluded.version_id, "
            "subjects = excluded.subjects, media_type = excluded.media_type, "
            "content_hash = excluded.content_hash, embedding = excluded.embedding, "
            "tags = excluded.tags, source_date = excluded.source_date, "
            # a rewrite of the same version keeps its liveness; a new version starts hidden
            "live = {}.live AND {}.version_id = excluded.version_id"
        ).format(self.table, self.table, self.table)
        with translated_errors("writing vectors"), self.pool.connection() as conn:
            with document_refusals("a vector"), conn.transaction(), conn.cursor() as cur:
                cur.executemany(
                    query,
                    [
                        (
                            r.chunk.chunk_id,
                            r.chunk.tenant_id,
                            r.chunk.source_id,
                            r.chunk.version_id,
                            list(r.chunk.subjects),
                            r.chunk.media_type,
                            r.chunk.content_hash,
                            np.asarray(r.vector, dtype=np.float32),
                            list(r.chunk.tags),
                            r.chunk.source_date,
                        )
                        # one lock order for every writer: concurrent upserts never deadlock
                        for r in sorted(records, key=lambda r: r.chunk.chunk_id)
                    ],
                )
        return len(records)

    def search(
        self,
        scope: AccessScope,
        vector: Sequence[float],
        limit: int,
        filters: SearchFilters | None = None,
    ) -> list[ScoredChunk]:
        self._check(vector)
        if not scope.subjects or limit <= 0:
            return []
        extra, extra_params = filter_conditions(filters)
        conditions = [
            sql.SQL("tenant_id = %s"),
            sql.SQL("live"),
            sql.SQL("groundwork_readable(subjects, %s)"),
            *extra,
        ]
        params: list[object] = [scope.tenant_id, list(scope.subjects), *extra_params]
        query_vector = np.asarray(vector, dtype=np.float32)
        query = sql.SQL(
            "SELECT chunk_id, source_id, version_id, 1 - (embedding <=> %s) AS similarity FROM {} "
            "WHERE {} ORDER BY embedding <=> %s LIMIT %s"
        ).format(self.table, sql.SQL(" AND ").join(conditions))
        with translated_errors("searching vectors"), self.pool.connection() as conn:
            # transaction-local (the checkout's transaction ends when the pool takes
            # the connection back), both in one statement: this is every search's path
            conn.execute(
                "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                "set_config('hnsw.ef_search', %s, true)",
                (str(max(self.ef_search, limit)),),
            )
            rows = conn.execute(query, [query_vector, *params, query_vector, limit]).fetchall()
        hits = [ScoredChunk(r[0], r[1], r[2], float(r[3])) for r in rows]
        # relaxed_order may return rows slightly out of order; the contract is descending similarity
        hits.sort(key=lambda h: (-h.score, h.chunk_id))
        return hits

    def existing_vectors(
        self, tenant_id: str, content_hashes: Sequence[str]
    ) -> dict[str, tuple[float, ...]]:
        if not content_hashes:
            return {}
        query = sql.SQL(
            "SELECT DISTINCT ON (content_hash) content_hash, embedding FROM {} "
            "WHERE tenant_id = %s AND content_hash = ANY(%s)"
        ).format(self.table)
        with translated_errors("reading cached vectors"), self.pool.connection() as conn:
            rows = conn.execute(query, (tenant_id, list(content_hashes))).fetchall()
        return {r[0]: tuple(float(x) for x in r[1].to_list()) for r in rows}
