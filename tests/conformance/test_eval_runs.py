"""EvalRuns conformance: the contract in groundwork.eval_records.EvalRuns, run
against the PostgreSQL adapter and the in-memory fake the workflow tests use."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from groundwork.errors import StoreError
from groundwork.eval_records import EvalResult, EvalRuns, EvalSuite, new_run_id
from resources.composition.platform import Platform
from tests.fakes_evals import InMemoryEvalRuns

NewTenant = Callable[[], str]


def scored(tenant_id: str, model_key: str, hybrid: float | None, suite: EvalSuite) -> EvalResult:
    relevance = [{"mode": "keyword", "ndcg_at_10": 0.41, "recall_at_100": 0.8, "queries": 3}]
    if hybrid is not None:
        relevance.append({"mode": "hybrid", "ndcg_at_10": hybrid, "recall_at_100": 0.9})
    return EvalResult(
        tenant_id,
        model_key,
        suite,
        relevance=relevance,
        citations={"checked": 4, "verified": 3, "rate": 0.75, "misses": ["q2: no span"]},
        cross_validation={"skipped": "3 queries; cross-validation needs at least 50"},
        seconds=1.25,
    )


class EvalRunsContract:
    @pytest.fixture
    def runs(self) -> EvalRuns:
        raise NotImplementedError

    @pytest.fixture
    def new_tenant(self) -> NewTenant:
        """Makes a tenant that exists for `runs`, a fresh one per call."""
        raise NotImplementedError

    def test_is_the_port(self, runs: EvalRuns) -> None:
        assert isinstance(runs, EvalRuns)

    def test_a_suite_is_none_until_set_and_set_replaces_it_whole(
        self, runs: EvalRuns, new_tenant: NewTenant
    ) -> None:
        tenant, other = new_tenant(), new_tenant()
        assert runs.suite(tenant) is None
        first = EvalSuite(golden_file="/data/a.jsonl", max_queries=5, budget_tokens=900)
        runs.set_suite(tenant, first)
        assert runs.suite(tenant) == first
        second = EvalSuite(beir_folder="/data/scifact", split="test")
        runs.set_suite(tenant, second)
        assert runs.suite(tenant) == second  # nothing of the first survives (max_queries None)
        assert runs.suite(other) is None

    def test_a_run_reads_back_as_recorded(self, runs: EvalRuns, new_tenant: NewTenant) -> None:
        tenant = new_tenant()
        suite = EvalSuite(golden_file="/data/g.jsonl", max_queries=7)
        result = scored(tenant, "bge-small", 0.62, suite)
        run_id = runs.record(result, "dagster-run-1")
        assert run_id.startswith("evr_")
        stored = runs.latest(tenant, "bge-small")
        assert stored is not None
        assert (stored.run_id, stored.tenant_id, stored.model_key) == (run_id, tenant, "bge-small")
        assert stored.results == result.to_dict()
        assert stored.suite == suite.to_dict()
        assert EvalSuite.from_dict(stored.suite) == suite
        assert stored.ndcg_hybrid == pytest.approx(0.62)
        assert stored.created_at.tzinfo is not None
        assert stored.mark is None

    def test_a_run_keeps_the_served_mark_it_was_scored_on(
        self, runs: EvalRuns, new_tenant: NewTenant
    ) -> None:
        tenant = new_tenant()
        assert runs.served_mark(tenant) is None  # no suite: never evaluated
        runs.set_suite(tenant, EvalSuite(golden_file="/data/g.jsonl"))
        mark = runs.served_mark(tenant)
        assert mark is not None and mark == runs.served_mark(tenant)
        runs.record(scored(tenant, "m", 0.5, EvalSuite()), mark=mark)
        stored = runs.latest(tenant, "m")
        assert stored is not None and stored.mark == mark
        runs.set_suite(tenant, EvalSuite(golden_file="/data/h.jsonl"))
        moved = runs.served_mark(tenant)
        assert moved is not None and moved.suite_updated_at != mark.suite_updated_at

    def test_a_run_without_a_hybrid_row_has_no_hybrid_figure(
        self, runs: EvalRuns, new_tenant: NewTenant
    ) -> None:
        tenant = new_tenant()
        runs.record(scored(tenant, "bge-small", None, EvalSuite()))
        stored = runs.latest(tenant, "bge-small")
        assert stored is not None and stored.ndcg_hybrid is None

    def test_a_given_run_id_is_kept_and_never_recorded_twice(
        self, runs: EvalRuns, new_tenant: NewTenant
    ) -> None:
        tenant = new_tenant()
        run_id = new_run_id()
        assert runs.record(scored(tenant, "m", 0.5, EvalSuite()), run_id=run_id) == run_id
        with pytest.raises(StoreError):
            runs.record(scored(tenant, "m", 0.9, EvalSuite()), run_id=run_id)
        [kept] = runs.history(tenant)
        assert kept.run_id == run_id and kept.ndcg_hybrid == pytest.approx(0.5)

    def test_history_is_newest_first_per_model_and_limited(
        self, runs: EvalRuns, new_tenant: NewTenant
    ) -> None:
        tenant = new_tenant()
        ids = [
            runs.record(scored(tenant, model, score, EvalSuite()))
            for model, score in (("a", 0.1), ("b", 0.2), ("a", 0.3), ("b", 0.4), ("a", 0.5))
        ]
        assert [r.run_id for r in runs.history(tenant)] == ids[::-1]
        assert [r.run_id for r in runs.history(tenant, "a")] == [ids[4], ids[2], ids[0]]
        assert [r.run_id for r in runs.history(tenant, limit=2)] == [ids[4], ids[3]]
        latest_b = runs.latest(tenant, "b")
        assert latest_b is not None and latest_b.run_id == ids[3]
        assert runs.latest(tenant, "c") is None

    def test_one_tenant_never_sees_anothers_runs_or_suite(
        self, runs: EvalRuns, new_tenant: NewTenant
    ) -> None:
        mine, theirs = new_tenant(), new_tenant()
        runs.set_suite(theirs, EvalSuite(golden_file="/theirs.jsonl"))
        runs.record(scored(theirs, "m", 0.9, EvalSuite()))
        assert runs.history(mine) == []
        assert runs.latest(mine, "m") is None
        assert runs.suite(mine) is None
        runs.record(scored(mine, "m", 0.1, EvalSuite()))
        assert {r.tenant_id for r in runs.history(theirs)} == {theirs}

    def test_an_unknown_tenant_is_refused(self, runs: EvalRuns) -> None:
        ghost = f"t-ghost-{uuid.uuid4().hex[:8]}"
        with pytest.raises(StoreError):
            runs.set_suite(ghost, EvalSuite())
        with pytest.raises(StoreError):
            runs.record(scored(ghost, "m", 0.5, EvalSuite()))
        assert runs.suite(ghost) is None and runs.history(ghost) == []


class TestPostgresEvalRuns(EvalRunsContract):
    @pytest.fixture
    def runs(self, platform: Platform) -> EvalRuns:
        return platform.eval_runs

    @pytest.fixture
    def new_tenant(self, platform: Platform) -> NewTenant:
        def make() -> str:
            tenant = f"t-{uuid.uuid4().hex[:10]}"
            platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
            return tenant

        return make


class TestInMemoryEvalRuns(EvalRunsContract):
    """The workflow tests' fake passes the same contract."""

    @pytest.fixture
    def fake(self) -> InMemoryEvalRuns:
        return InMemoryEvalRuns()

    @pytest.fixture
    def runs(self, fake: InMemoryEvalRuns) -> EvalRuns:
        return fake

    @pytest.fixture
    def new_tenant(self, fake: InMemoryEvalRuns) -> NewTenant:
        def make() -> str:
            tenant = f"t-{uuid.uuid4().hex[:10]}"
            fake.add_tenant(tenant)
            return tenant

        return make
