"""Eval suites and runs in Postgres (the `EvalRuns` port): each run is kept
with its configuration; both tables sit behind the tenant wall and are removed
with their tenant."""

from __future__ import annotations

from psycopg.types.json import Jsonb

from groundwork.eval_records import EvalResult, EvalSuite, ServedMark, StoredRun, new_run_id
from resources.postgres.database import translated_errors
from resources.postgres.tenant_wall import ConnectionSource


class PostgresEvalRuns:
    def __init__(self, pool: ConnectionSource) -> None:
        self.pool = pool

    def set_suite(self, tenant_id: str, suite: EvalSuite) -> None:
        with translated_errors("saving an eval suite"), self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO eval_suites (tenant_id, suite) VALUES (%s, %s) ON CONFLICT (tenant_id) "
                "DO UPDATE SET suite = excluded.suite, updated_at = now()",
                (tenant_id, Jsonb(suite.to_dict())),
            )

    def suite(self, tenant_id: str) -> EvalSuite | None:
        with translated_errors("reading an eval suite"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT suite FROM eval_suites WHERE tenant_id = %s", (tenant_id,)
            ).fetchone()
        return EvalSuite.from_dict(row[0]) if row else None

    def record(
        self,
        result: EvalResult,
        orchestrator_run: str | None = None,
        run_id: str | None = None,
        mark: ServedMark | None = None,
    ) -> str:
        """`run_id` when the caller named files after it before recording (new_run_id)."""
        run_id = run_id or new_run_id()
        with translated_errors("recording an eval run"), self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO eval_runs (run_id, tenant_id, model_key, suite, results, ndcg_hybrid, "
                "dagster_run, search_generation, suite_updated_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    run_id,
                    result.tenant_id,
                    result.model_key,
                    Jsonb(result.suite.to_dict()),
                    Jsonb(result.to_dict()),
                    result.metric("hybrid"),
                    orchestrator_run,
                    mark.search_generation if mark else None,
                    mark.suite_updated_at if mark else None,
                ),
            )
        return run_id

    def history(
        self, tenant_id: str, model_key: str | None = None, limit: int = 50
    ) -> list[StoredRun]:
        """Newest first."""
        where = "tenant_id = %s" + (" AND model_key = %s" if model_key else "")
        params: tuple[object, ...] = (tenant_id, model_key) if model_key else (tenant_id,)
        with translated_errors("reading eval history"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT run_id, tenant_id, model_key, suite, results, ndcg_hybrid, created_at, "
                "search_generation, suite_updated_at "
                f"FROM eval_runs WHERE {where} ORDER BY created_at DESC LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [
            StoredRun(
                run_id=row[0],
                tenant_id=row[1],
                model_key=row[2],
                suite=row[3],
                results=row[4],
                ndcg_hybrid=row[5],
                created_at=row[6],
                mark=ServedMark(row[7], row[8]) if row[8] is not None else None,
            )
            for row in rows
        ]

    def served_mark(self, tenant_id: str) -> ServedMark | None:
        with translated_errors("reading a served state"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT coalesce(g.generation, 0), e.updated_at FROM eval_suites e "
                "LEFT JOIN search_generations g USING (tenant_id) WHERE e.tenant_id = %s",
                (tenant_id,),
            ).fetchone()
        return ServedMark(int(row[0]), row[1]) if row else None

    def latest(self, tenant_id: str, model_key: str) -> StoredRun | None:
        runs = self.history(tenant_id, model_key, limit=1)
        return runs[0] if runs else None
