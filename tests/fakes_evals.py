"""An in-memory `EvalRuns` for tests of the eval workflow; it passes the same
conformance suite as the PostgreSQL adapter (tests/conformance/test_eval_runs.py)."""

from __future__ import annotations

import copy
import itertools
from datetime import UTC, datetime, timedelta

from groundwork.errors import StoreError
from groundwork.eval_records import EvalResult, EvalSuite, ServedMark, StoredRun, new_run_id


class InMemoryEvalRuns:
    def __init__(self, tenants: set[str] | None = None) -> None:
        #: the tenants that exist (the adapter's foreign key): others are refused
        self.tenants: set[str] = set(tenants or ())
        self._suites: dict[str, EvalSuite] = {}
        self._suite_versions: dict[str, datetime] = {}
        #: each tenant's search generation (the adapter reads the catalog's); tests raise it
        self.generations: dict[str, int] = {}
        self._runs: list[StoredRun] = []  # in recording order
        self._clock = itertools.count()
        self._epoch = datetime.now(UTC)

    def add_tenant(self, tenant_id: str) -> None:
        self.tenants.add(tenant_id)

    def _known(self, tenant_id: str, action: str) -> None:
        if tenant_id not in self.tenants:
            raise StoreError(f"refused {action}: no tenant {tenant_id}")

    def set_suite(self, tenant_id: str, suite: EvalSuite) -> None:
        self._known(tenant_id, "saving an eval suite")
        self._suites[tenant_id] = suite
        self._suite_versions[tenant_id] = self._epoch + timedelta(microseconds=next(self._clock))

    def served_mark(self, tenant_id: str) -> ServedMark | None:
        if tenant_id not in self._suites:
            return None
        return ServedMark(self.generations.get(tenant_id, 0), self._suite_versions[tenant_id])

    def suite(self, tenant_id: str) -> EvalSuite | None:
        return self._suites.get(tenant_id)

    def record(
        self,
        result: EvalResult,
        orchestrator_run: str | None = None,
        run_id: str | None = None,
        mark: ServedMark | None = None,
    ) -> str:
        self._known(result.tenant_id, "recording an eval run")
        run_id = run_id or new_run_id()
        if any(run.run_id == run_id for run in self._runs):
            raise StoreError(f"refused recording an eval run: {run_id} is recorded already")
        self._runs.append(
            StoredRun(
                run_id=run_id,
                tenant_id=result.tenant_id,
                model_key=result.model_key,
                # copies: a stored run does not change with the caller's objects
                suite=copy.deepcopy(result.suite.to_dict()),
                results=copy.deepcopy(result.to_dict()),
                ndcg_hybrid=result.metric("hybrid"),
                created_at=self._epoch + timedelta(microseconds=next(self._clock)),
                mark=mark,
            )
        )
        return run_id

    def history(
        self, tenant_id: str, model_key: str | None = None, limit: int = 50
    ) -> list[StoredRun]:
        mine = [
            run
            for run in reversed(self._runs)
            if run.tenant_id == tenant_id and (model_key is None or run.model_key == model_key)
        ]
        return mine[:limit]

    def latest(self, tenant_id: str, model_key: str) -> StoredRun | None:
        runs = self.history(tenant_id, model_key, limit=1)
        return runs[0] if runs else None
