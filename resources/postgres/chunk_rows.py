"""Row operations shared by the two PostgreSQL indexes (pgvector and full-text):
both keep one row per chunk with tenant, source, version, subjects and a live
flag, so liveness, permission changes, deletion and filters are the same SQL
on a different table.

Every change here raises the tenant's search generation in the same
transaction (migration 0020): a read replica serves a tenant's searches only
once it has replayed the generation the primary holds (read_replica.py)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import psycopg
from psycopg import sql

from groundwork.ports import AccessScope, SearchFilters, search_layer
from resources.postgres.database import translated_errors
from resources.postgres.tenant_wall import ConnectionSource


def filter_conditions(filters: SearchFilters | None) -> tuple[list[sql.Composable], list[object]]:
    """Metadata filters as WHERE conditions, applied inside the search query;
    always one layer (raw unless the filters ask for the summary layer)."""
    conditions: list[sql.Composable] = [sql.SQL("layer = %s")]
    params: list[object] = [search_layer(filters)]
    if filters and filters.source_ids is not None:
        conditions.append(sql.SQL("source_id = ANY(%s)"))
        params.append(list(filters.source_ids))
    if filters and filters.media_types is not None:
        conditions.append(sql.SQL("media_type = ANY(%s)"))
        params.append(list(filters.media_types))
    if filters and filters.tags is not None:
        conditions.append(sql.SQL("tags && %s"))
        params.append(list(filters.tags))
    if filters and filters.date_from is not None:
        conditions.append(sql.SQL("source_date >= %s"))
        params.append(filters.date_from)
    if filters and filters.date_to is not None:
        conditions.append(sql.SQL("source_date < %s"))
        params.append(filters.date_to)
    if filters and filters.document_types is not None:
        conditions.append(sql.SQL("document_type = ANY(%s)"))
        params.append(list(filters.document_types))
    return conditions, params


def owner_condition(scope: AccessScope) -> tuple[sql.Composable, list[object]]:
    """The authorization filter of a search as one WHERE condition: each corpus
    the scope reads (its tenant's own, the system corpus's) with its own
    subjects, never an owner without its subjects."""
    owners = scope.readable_owners()
    arm = sql.SQL("(tenant_id = %s AND groundwork_readable(subjects, %s))")
    condition = sql.SQL("({})").format(sql.SQL(" OR ").join(arm for _ in owners))
    return condition, [value for owner, subjects in owners for value in (owner, list(subjects))]


#: One statement, last in the writer's transaction: the generation rows are
#: locked after the chunk rows and nothing is locked after them, so two writers
#: can never wait on each other in a cycle (tenants in one order, too).
RAISE_GENERATIONS = (
    "INSERT INTO search_generations AS g (tenant_id, generation) "
    "SELECT t, 1 FROM unnest(%s::text[]) AS t ORDER BY t "
    "ON CONFLICT (tenant_id) DO UPDATE SET generation = g.generation + 1"
)


def raise_search_generations(conn: psycopg.Connection, tenant_ids: Collection[str]) -> None:
    """Raise these tenants' search generations inside `conn`'s open transaction,
    which must be the one that changed their rows (so a replica that holds the
    new generation holds the change)."""
    if tenant_ids:
        conn.execute(RAISE_GENERATIONS, (sorted(set(tenant_ids)),))


class ChunkRowTable:
    def __init__(self, pool: ConnectionSource, table: str) -> None:
        self.pool = pool
        self.table = sql.Identifier(table)

    def _execute(
        self, action: str, query: sql.Composed, params: Sequence[object], tenant_id: str
    ) -> int:
        """Run one change to the tenant's rows; when it touched any, raise the
        tenant's search generation in the same transaction."""
        with translated_errors(action), self.pool.connection() as conn:
            changed = conn.execute(query, params).rowcount
            if changed:
                raise_search_generations(conn, [tenant_id])
            return changed

    def _raise_where_live(self, conn: psycopg.Connection, chunk_ids: Sequence[str]) -> None:
        """After an upsert, inside its transaction: rewriting a live row (the same
        version written again) changes what searches see, so its tenant's
        generation goes up; rows of a new version are written hidden and do not."""
        query = sql.SQL(
            "SELECT DISTINCT tenant_id FROM {} WHERE chunk_id = ANY(%s) AND live"
        ).format(self.table)
        tenants = [r[0] for r in conn.execute(query, (list(chunk_ids),)).fetchall()]
        raise_search_generations(conn, tenants)

    def set_live(self, tenant_id: str, source_id: str, version_id: str | None, live: bool) -> int:
        # only rows that change: an UPDATE of an unchanged row still writes a new
        # row version and new index entries (the tenant graph's included)
        query = sql.SQL(
            "UPDATE {} SET live = %s WHERE tenant_id = %s AND source_id = %s AND live <> %s"
        ).format(self.table)
        params: list[object] = [live, tenant_id, source_id, live]
        if version_id is not None:
            query += sql.SQL(" AND version_id = %s")
            params.append(version_id)
        return self._execute("changing liveness", query, params, tenant_id)

    def set_versions_live(self, tenant_id: str, version_ids: Sequence[str], live: bool) -> int:
        if not version_ids:
            return 0
        query = sql.SQL(
            "UPDATE {} SET live = %s WHERE tenant_id = %s AND version_id = ANY(%s) AND live <> %s"
        ).format(self.table)
        return self._execute(
            "changing liveness", query, [live, tenant_id, list(version_ids), live], tenant_id
        )

    def set_subjects(self, tenant_id: str, source_id: str, subjects: Sequence[str]) -> int:
        query = sql.SQL(
            "UPDATE {} SET subjects = %s WHERE tenant_id = %s AND source_id = %s"
        ).format(self.table)
        return self._execute(
            "changing subjects", query, [list(subjects), tenant_id, source_id], tenant_id
        )

    def set_tags(self, tenant_id: str, source_id: str, tags: Sequence[str]) -> int:
        query = sql.SQL("UPDATE {} SET tags = %s WHERE tenant_id = %s AND source_id = %s").format(
            self.table
        )
        return self._execute("changing tags", query, [list(tags), tenant_id, source_id], tenant_id)

    def delete_source(
        self, tenant_id: str, source_id: str, keep_version_id: str | None = None
    ) -> int:
        query = sql.SQL("DELETE FROM {} WHERE tenant_id = %s AND source_id = %s").format(self.table)
        params: list[object] = [tenant_id, source_id]
        if keep_version_id is not None:
            query += sql.SQL(" AND version_id <> %s")
            params.append(keep_version_id)
        return self._execute("deleting a source's rows", query, params, tenant_id)

    def delete_versions(self, tenant_id: str, version_ids: Sequence[str]) -> int:
        if not version_ids:
            return 0
        query = sql.SQL("DELETE FROM {} WHERE tenant_id = %s AND version_id = ANY(%s)").format(
            self.table
        )
        return self._execute(
            "deleting versions' rows", query, [tenant_id, sorted(version_ids)], tenant_id
        )

    def delete_tenant(self, tenant_id: str) -> int:
        query = sql.SQL("DELETE FROM {} WHERE tenant_id = %s").format(self.table)
        return self._execute("deleting a tenant's rows", query, [tenant_id], tenant_id)

    def chunk_ids(self, tenant_id: str, live_only: bool = True) -> set[str]:
        query = sql.SQL("SELECT chunk_id FROM {} WHERE tenant_id = %s").format(self.table)
        if live_only:
            query += sql.SQL(" AND live")
        with translated_errors("listing chunk rows"), self.pool.connection() as conn:
            return {r[0] for r in conn.execute(query, (tenant_id,)).fetchall()}
