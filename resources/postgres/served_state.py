"""What each evaluated tenant serves, in one read: the evaluation sensor's input.

A tenant's evaluation is worth running again only when what searches see
changed or what it is scored against changed. Both are already recorded:
every change to a tenant's index rows (publication, retirement, deletion, a
permission or tag change) raises its search generation in the same
transaction (migration 0020, `chunk_rows.py`); a model switch changes the
tenant's serving model; a new golden set or eval configuration moves the
suite's `updated_at`. So one row per tenant with a suite says it all, and a
sensor tick reads a thousand such rows instead of any tenant's chunks.
"""

from __future__ import annotations

from dataclasses import dataclass

from resources.postgres.database import translated_errors
from resources.postgres.tenant_wall import ConnectionSource


@dataclass(frozen=True, slots=True)
class ServedState:
    tenant_id: str
    serving_model: str
    search_generation: int  # 0 before the tenant's first index change
    suite_updated_at: float  # epoch seconds of the suite's last change


class PostgresServedStates:
    def __init__(self, pool: ConnectionSource) -> None:
        self.pool = pool

    def with_suites(self) -> list[ServedState]:
        """Every tenant that has an eval suite (the others are never evaluated)."""
        with translated_errors("reading served states"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT t.tenant_id, t.active_model, coalesce(g.generation, 0), "
                "extract(epoch FROM e.updated_at)::float8 "
                "FROM eval_suites e JOIN tenants t USING (tenant_id) "
                "LEFT JOIN search_generations g USING (tenant_id) ORDER BY t.tenant_id"
            ).fetchall()
        return [ServedState(r[0], r[1], int(r[2]), float(r[3])) for r in rows]

    def ever_evaluated(self, tenant_ids: list[str]) -> set[tuple[str, str]]:
        """(tenant, model) pairs with at least one stored eval run: a pair the
        sensor meets for the first time (an upgrade, a lost cursor) is adopted
        as evaluated when it has a run, and evaluated once when it never had."""
        if not tenant_ids:
            return set()
        with translated_errors("reading eval history"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT DISTINCT tenant_id, model_key FROM eval_runs WHERE tenant_id = ANY(%s)",
                (sorted(set(tenant_ids)),),
            ).fetchall()
        return {(r[0], r[1]) for r in rows}

    def evaluated_as_served(self, keys: list[tuple[str, str]]) -> set[tuple[str, str]]:
        """The (tenant, model) pairs whose newest eval run was scored on what
        the tenant serves now (the search generation and suite version it kept,
        `ServedMark`): whoever started that run, the state needs no second
        evaluation. A run recorded without a mark never matches."""
        if not keys:
            return set()
        with translated_errors("reading eval history"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT r.tenant_id, r.model_key FROM ("
                "SELECT DISTINCT ON (tenant_id, model_key) tenant_id, model_key, "
                "search_generation, suite_updated_at FROM eval_runs "
                "WHERE tenant_id = ANY(%s) ORDER BY tenant_id, model_key, created_at DESC"
                ") r JOIN eval_suites e USING (tenant_id) "
                "LEFT JOIN search_generations g USING (tenant_id) "
                "WHERE r.search_generation = coalesce(g.generation, 0) "
                "AND r.suite_updated_at = e.updated_at",
                (sorted({tenant for tenant, _ in keys}),),
            ).fetchall()
        return {(r[0], r[1]) for r in rows} & set(keys)
