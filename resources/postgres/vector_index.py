"""The VectorIndex port on pgvector: one table and HNSW index per model.

Authorization (tenant, subjects), liveness and metadata filters are in the
WHERE clause of the nearest-neighbour query itself, never applied after it.

No graph spans tenants (migration 0023). A tenant with `EXACT_BELOW_ROWS` rows
or more has an HNSW graph of its own (a partial index, `refresh_tenant_graphs`),
built before its rows go live, and a search walks it with
`hnsw.iterative_scan`, which keeps scanning until enough rows pass the filter;
any other tenant is searched exactly (its live rows read through the
live-tenant btree, migration 0018, and sorted by distance). The shared graph
this replaced was measured (bench/scale.py, 200k chunks, 200 Zipf tenants) to
return the wrong rows for filtered tenants: recall@10 0.84-0.90 for tenants of
5-11k rows even at ef_search 800, 0.79 for a 1k-row tenant when the planner
chose it; it cost ~2 KB per vector and an insert into one ever-growing graph
per chunk. The exact scan costs about 1 ms per 1,000 rows, a tenant's own
graph 1-3 ms at recall 0.99+.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from psycopg import sql

from groundwork.embedding_models import EmbeddingModelRef
from groundwork.errors import DimensionMismatch, EngineUnavailable, StoreError
from groundwork.ports import AccessScope, ScoredChunk, SearchFilters, VectorRecord
from resources.postgres.chunk_rows import ChunkRowTable, filter_conditions
from resources.postgres.database import document_refusals, translated_errors
from resources.postgres.read_replica import ReadReplica
from resources.postgres.tenant_wall import ConnectionSource, TenantWalledPool

#: Tenants with fewer live rows are searched exactly; larger ones get a graph of
#: their own (`refresh_tenant_graphs`). Measured (bench/scale.py, 200k chunks):
#: exact p50 5 ms at 5.7k rows, 13 / p95 23 ms at 11k, 35 / 54 ms at 34k; a
#: tenant's own graph at ef_search 200: recall@10 0.994-0.998, p95 3-7 ms at
#: 11k-34k. The line was first drawn at 10k; through /v1/search the SciFact
#: tenant (9,954 rows, exact) then took p50 33.5 ms at 1 client and 54 req/s at
#: 8 (bench/search_load.py), against 17.4 ms and 89 req/s on its own graph: exact
#: costs ~1.5 ms of server CPU per 1,000 rows, so it is kept for small tenants.
EXACT_BELOW_ROWS = 3_000

#: ef_search of the graph path. A tenant's own graph: recall@10 0.976 at 100,
#: 0.994 at 200 (34k rows); SciFact nDCG@10 of the vector leg unchanged, 0.747.
GRAPH_EF_SEARCH = 200

#: A graph of fewer rows is walked at SMALL_GRAPH_EF_SEARCH instead. On the
#: SciFact tenant's graph (15,206 rows, 200 train queries against the exact
#: scan) ef_search 100 kept recall@10 0.988 against 0.998 at 200; the eval's
#: 300 golden queries ranked the same sources in every mode (nDCG@10 0.733
#: vector, 0.734 hybrid, at either width); and the walk is shorter:
#: PostgreSQL's CPU per search through `groundwork up` 4.87 -> 4.34 and 5.12 ->
#: 4.50 ms in two A/B runs at 8 clients (bench/README.md). At 34k rows
#: ef_search 100 fell to recall@10 0.976, so larger graphs keep 200.
SMALL_GRAPH_ROWS = 20_000
SMALL_GRAPH_EF_SEARCH = 100

#: A tenant's graph of this many rows or more is searched wider: ef_search grows
#: by GRAPH_EF_SEARCH per ROWS_PER_EF rows, up to pgvector's 1,000. Recall@10 at
#: ef_search 200 falls as a graph grows (bench/scale.py, 1M chunks, 60 queries):
#: 0.988 at 33-67k rows, 0.963 at 134k (0.988 there at 400, 0.995 at 600).
ROWS_PER_EF = 65_000
#: pgvector's largest hnsw.ef_search
MAX_EF_SEARCH = 1_000

#: how a tenant graph's index comment names its tenant (index names hold a digest)
GRAPH_COMMENT = "tenant graph: "


@dataclass(frozen=True, slots=True)
class TenantGraphChanges:
    created: tuple[str, ...]
    dropped: tuple[str, ...]


#: ef_search for a tenant, from the rows of its graph (pg_class.reltuples,
#: which the index build and vacuum keep; 0 without a graph): the small graphs'
#: base below their line, else the base widened by the rows. Parameters:
#: SMALL_GRAPH_ROWS, small base, base, MAX_EF_SEARCH, base, ROWS_PER_EF, graph index name.
_EF_SEARCH = sql.SQL(
    "(SELECT CASE WHEN g.n < %s THEN %s ELSE greatest(%s, least(%s, (%s * g.n / %s)::int)) END "
    "FROM (SELECT greatest(coalesce((SELECT c.reltuples FROM pg_class c "
    "WHERE c.oid = to_regclass(%s)), 0), 0) AS n) AS g)"
)


class PgVectorIndex(ChunkRowTable):
    def __init__(
        self,
        pool: ConnectionSource,
        model: EmbeddingModelRef,
        ef_search: int = GRAPH_EF_SEARCH,
        exact_below: int = EXACT_BELOW_ROWS,
        replica: ReadReplica | None = None,
        rows_per_ef: int = ROWS_PER_EF,
        small_graph_rows: int = SMALL_GRAPH_ROWS,
        small_ef_search: int = SMALL_GRAPH_EF_SEARCH,
    ) -> None:
        super().__init__(pool, f"embeddings_{model.key}")
        self._table_name = f"embeddings_{model.key}"
        self._model = model
        self.ef_search = ef_search
        self.exact_below = exact_below
        self.rows_per_ef = rows_per_ef
        self.small_graph_rows = small_graph_rows
        self.small_ef_search = small_ef_search
        #: where the vector leg may read (writes never go there), see read_replica.py
        self.replica = replica

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
            "content_hash, live, embedding, tags, source_date, layer, document_type) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, false, %s, %s, %s, %s, %s) "
            "ON CONFLICT (chunk_id) DO UPDATE SET tenant_id = excluded.tenant_id, "
            "source_id = excluded.source_id, version_id = excluded.version_id, "
            "subjects = excluded.subjects, media_type = excluded.media_type, "
            "content_hash = excluded.content_hash, embedding = excluded.embedding, "
            "tags = excluded.tags, source_date = excluded.source_date, layer = excluded.layer, "
            "document_type = excluded.document_type, "
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
                            r.chunk.layer,
                            r.chunk.document_type,
                        )
                        # one lock order for every writer: concurrent upserts never deadlock
                        for r in sorted(records, key=lambda r: r.chunk.chunk_id)
                    ],
                )
                self._raise_where_live(conn, [r.chunk.chunk_id for r in records])
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
        query_vector = np.asarray(vector, dtype=np.float32)
        owners = scope.readable_owners()
        # One nearest-neighbour query per corpus read (the tenant's own, the
        # system corpus's), each with its owner named as a value, so each is
        # planned onto that owner's graph or exact scan as before; an OR of
        # owners would prove neither partial graph and scan both tables' worth.
        arms: list[sql.Composed] = []
        params: list[object] = []
        for owner, subjects in owners:
            conditions = [
                sql.SQL("tenant_id = %s"),
                sql.SQL("live"),
                sql.SQL("groundwork_readable(subjects, %s)"),
                *extra,
            ]
            arms.append(
                sql.SQL(
                    "SELECT chunk_id, source_id, version_id, 1 - (embedding <=> %s) AS similarity "
                    "FROM {} WHERE {} ORDER BY embedding <=> %s LIMIT %s"
                ).format(self.table, sql.SQL(" AND ").join(conditions))
            )
            params += [query_vector, owner, list(subjects), *extra_params, query_vector, limit]
        query: sql.Composed = arms[0]
        if len(arms) > 1:
            query = sql.SQL(
                "SELECT * FROM ({}) AS nearest ORDER BY similarity DESC LIMIT %s"
            ).format(sql.SQL(" UNION ALL ").join(sql.SQL("({})").format(arm) for arm in arms))
            params.append(limit)
        nearest = (query, params)
        rows = None
        replica = self.replica
        if replica is not None and replica.usable():
            # the primary's generations first: whatever was committed before this
            # search began is in them (read_replica.py states the rule), the
            # system corpus's too when it is read
            generations = {owner: self._search_generation(owner) for owner, _ in owners}
            try:
                rows = self._nearest(
                    replica.pool,
                    scope.tenant_id,
                    limit,
                    nearest,
                    generations,
                    replica.checkout_seconds,
                )
            except (EngineUnavailable, StoreError) as exc:
                replica.failed(exc)
            else:
                if rows is None:
                    replica.behind()
                else:
                    replica.served()
        if rows is None:
            rows = self._nearest(self.pool, scope.tenant_id, limit, nearest)
            assert rows is not None
        hits = [ScoredChunk(r[0], r[1], r[2], float(r[3])) for r in rows]
        # relaxed_order may return rows slightly out of order; the contract is descending similarity
        hits.sort(key=lambda h: (-h.score, h.chunk_id))
        return hits

    def _search_generation(self, tenant_id: str) -> int:
        """The tenant's search generation on the primary (0 before its first change)."""
        with translated_errors("reading a search generation"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT generation FROM search_generations WHERE tenant_id = %s", (tenant_id,)
            ).fetchone()
        return int(row[0]) if row else 0

    def _nearest(
        self,
        pool: ConnectionSource,
        tenant_id: str,
        limit: int,
        nearest: tuple[sql.Composed, list[object]],
        generations: Mapping[str, int] | None = None,
        timeout: float | None = None,
    ) -> list[tuple[str, str, str, float]] | None:
        """The nearest rows on `pool`; None, without searching, when
        `generations` are given and the server holds an older one for any of
        their tenants (a replica that has not replayed a latest change)."""
        # No graph spans tenants (migration 0023): a tenant with a graph of its own
        # is planned onto it (its partial predicate is proven from the query's
        # `tenant_id = <value>`), any other is read through the live-tenant btree and
        # sorted, which is exact. So the settings below are all a search needs.
        # (on a replica, the same statement reads whether it holds the generation)
        settings = sql.SQL(
            "set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.ef_search', ({})::text, true)"
        ).format(_EF_SEARCH)
        ef_params = self._ef_params(tenant_id, limit)
        # Never a prepared statement: a cached generic plan is made for any
        # tenant and ignores the settings above (measured: after psycopg's fifth
        # execution on a connection, plans flipped between the graph and the
        # exact scan whatever the tenant's size).
        if generations is None and isinstance(pool, TenantWalledPool):
            # the settings go up with the wall, in its statement: a search's
            # checkout is then the wall, the query and the commit
            with (
                translated_errors("searching vectors"),
                pool.connection(timeout=timeout, settings=(settings, ef_params)) as conn,
            ):
                return conn.execute(nearest[0], nearest[1], prepare=False).fetchall()
        current: sql.Composable = sql.SQL("true")
        params: list[object] = list(ef_params)
        if generations is not None:
            current = sql.SQL(" AND ").join(
                sql.SQL(
                    "coalesce((SELECT generation FROM search_generations WHERE tenant_id = %s), 0) >= %s"
                )
                for _ in generations
            )
            params += [value for item in sorted(generations.items()) for value in item]
        choose_path = sql.SQL("SELECT {}, {}").format(settings, current)
        with translated_errors("searching vectors"), pool.connection(timeout=timeout) as conn:
            # transaction-local (the checkout's transaction ends when the pool takes
            # the connection back), in one statement; on a replica the same
            # statement reads whether it holds the generation
            path = conn.execute(choose_path, params).fetchone()
            if path is None or not path[2]:
                return None
            return conn.execute(nearest[0], nearest[1], prepare=False).fetchall()

    def _ef_params(self, tenant_id: str, limit: int) -> list[object]:
        base = min(max(self.ef_search, limit), MAX_EF_SEARCH)
        small = min(max(self.small_ef_search, limit), MAX_EF_SEARCH)
        return [
            self.small_graph_rows,
            small,
            base,
            MAX_EF_SEARCH,
            base,
            self.rows_per_ef,
            self._graph_name(tenant_id),
        ]

    def ef_search_for(self, tenant_id: str, limit: int) -> int:
        """The ef_search a search of `limit` rows runs at for this tenant: the
        expression the search itself sets, read from the tenant graph's row count
        as its build (or the last vacuum) recorded it: no count on the search path."""
        with translated_errors("reading a search width"), self.pool.connection() as conn:
            row = conn.execute(
                sql.SQL("SELECT {}").format(_EF_SEARCH), self._ef_params(tenant_id, limit)
            ).fetchone()
        assert row is not None
        return int(row[0])

    def _graph_name(self, tenant_id: str) -> str:
        # an identifier holds 63 bytes and a tenant id alone may take 63: a digest
        return f"{self._table_name}_tg_{hashlib.sha1(tenant_id.encode()).hexdigest()[:16]}"

    def _graph_indexes(self) -> list[tuple[str, str | None, bool]]:
        """(index name, tenant named by its comment, valid) of every tenant graph."""
        with translated_errors("listing tenant graphs"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT c.relname, obj_description(i.indexrelid, 'pg_class'), i.indisvalid "
                "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE i.indrelid = to_regclass(%s) AND starts_with(c.relname, %s)",
                (self._table_name, f"{self._table_name}_tg_"),
            ).fetchall()
        return [
            (str(r[0]), str(r[1]).removeprefix(GRAPH_COMMENT) if r[1] else None, bool(r[2]))
            for r in rows
        ]

    def tenant_graphs(self) -> dict[str, str]:
        """Tenant id -> name of the tenant's own (valid) HNSW index."""
        return {t: name for name, t, valid in self._graph_indexes() if t and valid}

    def refresh_tenant_graphs(
        self, tenant_ids: Collection[str] | None = None, maintenance_work_mem: str = "512MB"
    ) -> TenantGraphChanges:
        """Give every tenant with at least `exact_below` rows an HNSW index of its
        own (partial: `WHERE tenant_id = ...`) and drop those of tenants that fell
        below half of it. Rows are counted live or not: publication runs this
        first, so a tenant's graph holds its new rows before they go live. A search with the tenant filter plans onto the
        tenant's graph by itself: the predicate is proven from the query's
        `tenant_id = <value>` (searches are never prepared, so the value is known).

        Why not one graph for every tenant: it walks other tenants' neighbourhoods and the filter
        discards most of what it finds; bench/scale.py measured recall@10 0.917
        for a 17k-row tenant at ef_search 400 there, 0.998 on its own graph at 200.
        Built CONCURRENTLY, so writes to the table are never blocked; a graph left
        invalid (or unnamed) by an interrupted build is dropped and built again.
        Maintenance work (after publication), never on the search path.
        `tenant_ids`: only these tenants (a tenant partition's run), else all."""
        count = sql.SQL("SELECT tenant_id, count(*) FROM {} {} GROUP BY 1").format(
            self.table,
            sql.SQL("") if tenant_ids is None else sql.SQL("WHERE tenant_id = ANY(%(only)s)"),
        )
        only = {"only": sorted(tenant_ids or ())}
        with translated_errors("counting tenants' rows"), self.pool.connection() as conn:
            counts = {str(r[0]): int(r[1]) for r in conn.execute(count, only).fetchall()}
        wanted = {t for t, n in counts.items() if n >= self.exact_below}
        created: list[str] = []
        dropped: list[str] = []
        if isinstance(self.pool, TenantWalledPool):
            # the commit below would end the transaction that holds a tenant wall
            raise ValueError("tenant graphs are built on the owner's pool, never a walled one")
        with translated_errors("building tenant graphs"), self.pool.connection() as conn:
            # CONCURRENTLY cannot run inside a transaction; the connection goes back
            # to the pool as it came (transactional, default settings)
            conn.commit()  # owner-only: never on a walled pool (checked above)
            conn.autocommit = True  # owner-only
            try:
                conn.execute(
                    sql.SQL("SET maintenance_work_mem = {}").format(
                        sql.Literal(maintenance_work_mem)
                    )
                )
                kept: set[str] = set()
                for name, tenant, valid in self._graph_indexes():
                    if tenant_ids is not None and tenant not in tenant_ids:
                        continue
                    # dropped only below half the line: a tenant hovering at the line
                    # does not rebuild its graph back and forth
                    if valid and tenant and counts.get(tenant, 0) >= self.exact_below // 2:
                        kept.add(tenant)
                        continue
                    drop = sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}")
                    conn.execute(drop.format(sql.Identifier(name)))
                    if valid and tenant:
                        dropped.append(tenant)
                for tenant in sorted(wanted - kept):
                    graph = sql.Identifier(self._graph_name(tenant))
                    conn.execute(
                        sql.SQL(
                            "CREATE INDEX CONCURRENTLY {} ON {} "
                            "USING hnsw (embedding vector_cosine_ops) WHERE tenant_id = {}"
                        ).format(graph, self.table, sql.Literal(tenant))
                    )
                    conn.execute(
                        sql.SQL("COMMENT ON INDEX {} IS {}").format(
                            graph, sql.Literal(GRAPH_COMMENT + tenant)
                        )
                    )
                    created.append(tenant)
            finally:
                conn.execute("RESET maintenance_work_mem")
                conn.autocommit = False
        return TenantGraphChanges(tuple(created), tuple(dropped))

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
