"""Evaluation follows changes to what is served, once per burst ("Operable:
quiet when idle"): the run-status sensor it replaces evaluated a tenant after
every successful ingest run, so an hourly rescan that published nothing cost
a full evaluation of every tenant, and a file every few seconds an evaluation
every few seconds. Real PostgreSQL, a real Dagster instance, real runs; only
the sensor's clock is moved instead of sleeping out the debounce interval."""

from __future__ import annotations

import uuid
from pathlib import Path

import dagster as dg
import pytest

from assets.partitions import tenant_model_key
from evals.suite import EvalSuite
from groundwork.stages.registration import register_file
from pipelines import sensors
from pipelines.definitions import ALL_ASSETS
from pipelines.evaluation_debounce import EVALUATION_DEBOUNCE_SECONDS
from pipelines.sensors import evaluate_after_publish
from resources.composition.platform import Platform
from resources.postgres.eval_runs import PostgresEvalRuns
from tests.e2e.helpers import ingest_run, publish_registered, resource, write_inbox

DEBOUNCE = EVALUATION_DEBOUNCE_SECONDS


class Ticks:
    """The evaluation sensor ticking on a real instance, its cursor carried
    over like the daemon does, at the times the test names."""

    def __init__(
        self, instance: dg.DagsterInstance, index_prefix: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.instance = instance
        self.index_prefix = index_prefix
        self.monkeypatch = monkeypatch
        self.cursor: str | None = None

    def at(self, now: float, tenant_id: str) -> list[str]:
        """The partitions of `tenant_id` the tick at `now` requests evaluations of."""
        self.monkeypatch.setattr(sensors, "_now", lambda: now)
        result = evaluate_after_publish(
            dg.build_sensor_context(
                instance=self.instance,
                cursor=self.cursor,
                resources={"groundwork": resource(self.index_prefix)},
            )
        )
        assert isinstance(result, dg.SensorResult)
        self.cursor = result.cursor
        return [
            str(r.partition_key)
            for r in result.run_requests or []
            if isinstance(r, dg.RunRequest) and str(r.partition_key).endswith(f"|{tenant_id}")
        ]


def _add_note(platform: Platform, tenant_id: str, name: str) -> None:
    register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant_id,
        origin=f"api:{name}",
        filename=name,
        data=f"# {name}\n\nA note called {name}, {uuid.uuid4().hex}.\n".encode(),
        subjects=[f"tenant:{tenant_id}"],
        media_type="text/markdown",
    )


@pytest.fixture
def evaluated_tenant(platform: Platform, tmp_path: Path) -> tuple[str, str]:
    """A published tenant with an eval suite; (tenant, its serving partition)."""
    tenant = f"ev-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _add_note(platform, tenant, "first.md")
    publish_registered(platform, tenant)
    PostgresEvalRuns(platform.pool).set_suite(tenant, EvalSuite(beir_folder=str(tmp_path)))
    return tenant, str(tenant_model_key(tenant, platform.settings.default_model_key))


def _first_evaluation(ticks: Ticks, tenant: str, partition: str, t0: float) -> None:
    """A suite never evaluated is evaluated once, after the quiet interval."""
    assert ticks.at(t0, tenant) == []
    assert ticks.at(t0 + DEBOUNCE, tenant) == [partition]
    assert ticks.at(t0 + DEBOUNCE + 30, tenant) == []


def test_an_ingest_run_that_publishes_nothing_requests_no_evaluation(
    platform: Platform,
    index_prefix: str,
    evaluated_tenant: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tenant, partition = evaluated_tenant
    write_inbox(platform.settings.inbox_dir, tenant, {"inbox.md": "# Inbox\n\nFrom the folder.\n"})
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("tenant", [tenant])
        ticks = Ticks(instance, index_prefix, monkeypatch)
        ingest_run(instance, index_prefix, tenant)
        _first_evaluation(ticks, tenant, partition, 1_000_000.0)
        # the hourly rescan: a real tenant_ingest run over an unchanged inbox
        ingest_run(instance, index_prefix, tenant)
        for later in (1, DEBOUNCE, 10 * DEBOUNCE, 100 * DEBOUNCE):
            assert ticks.at(1_000_000.0 + 2 * DEBOUNCE + later, tenant) == []


def test_a_publication_requests_one_evaluation_after_the_quiet_interval(
    platform: Platform,
    index_prefix: str,
    evaluated_tenant: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tenant, partition = evaluated_tenant
    with dg.instance_for_test() as instance:
        ticks = Ticks(instance, index_prefix, monkeypatch)
        t0 = 2_000_000.0
        _first_evaluation(ticks, tenant, partition, t0)
        _add_note(platform, tenant, "second.md")
        publish_registered(platform, tenant)
        published_at = t0 + 2 * DEBOUNCE
        assert ticks.at(published_at, tenant) == []  # waits for the burst to end
        assert ticks.at(published_at + DEBOUNCE - 1, tenant) == []
        assert ticks.at(published_at + DEBOUNCE, tenant) == [partition]
        assert ticks.at(published_at + DEBOUNCE + 30, tenant) == []
        # a new golden set is a change of what the tenant is scored on
        PostgresEvalRuns(platform.pool).set_suite(tenant, EvalSuite(beir_folder="/elsewhere"))
        assert ticks.at(published_at + 2 * DEBOUNCE, tenant) == []
        assert ticks.at(published_at + 3 * DEBOUNCE, tenant) == [partition]


def test_a_burst_of_publications_is_one_evaluation_after_the_burst(
    platform: Platform,
    index_prefix: str,
    evaluated_tenant: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tenant, partition = evaluated_tenant
    with dg.instance_for_test() as instance:
        ticks = Ticks(instance, index_prefix, monkeypatch)
        t0 = 3_000_000.0
        _first_evaluation(ticks, tenant, partition, t0)
        start = t0 + 2 * DEBOUNCE
        step = DEBOUNCE / 4  # every publication inside the previous one's window
        for n in range(5):
            _add_note(platform, tenant, f"burst-{n}.md")
            publish_registered(platform, tenant)
            assert ticks.at(start + n * step, tenant) == [], n
        last = start + 4 * step
        assert ticks.at(last + DEBOUNCE - 1, tenant) == []
        assert ticks.at(last + DEBOUNCE, tenant) == [partition]
        assert ticks.at(last + 2 * DEBOUNCE, tenant) == []


def test_a_tenant_that_never_goes_quiet_is_still_evaluated_but_spaced(
    platform: Platform,
    index_prefix: str,
    evaluated_tenant: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file every minute never leaves five quiet minutes: the tenant is
    evaluated when its change has waited the longest deferral, not every minute."""
    from pipelines.evaluation_debounce import MAX_DEFERRAL_SECONDS

    tenant, partition = evaluated_tenant
    with dg.instance_for_test() as instance:
        ticks = Ticks(instance, index_prefix, monkeypatch)
        t0 = 4_000_000.0
        _first_evaluation(ticks, tenant, partition, t0)
        start = t0 + 2 * DEBOUNCE
        requested_at = []
        for minute in range(int(MAX_DEFERRAL_SECONDS // 60) + 2):
            _add_note(platform, tenant, f"stream-{minute}.md")
            publish_registered(platform, tenant)
            if ticks.at(start + minute * 60, tenant):
                requested_at.append(minute * 60)
        assert requested_at == [MAX_DEFERRAL_SECONDS]


def test_a_candidate_model_is_evaluated_after_its_publication_run_only_when_it_changed(
    platform: Platform,
    index_prefix: str,
    evaluated_tenant: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model being prepared is published by model_publish runs, and its
    evaluation gates the switch: a finished run of it is examined; it is
    evaluated when the tenant's served state differs from the candidate's last
    evaluation, and a run that published nothing requests nothing."""
    from dagster._core.test_utils import create_run_for_test

    from groundwork.embedding_models import KNOWN_MODELS

    tenant, partition = evaluated_tenant
    candidate = next(m for m in sorted(KNOWN_MODELS) if m != platform.settings.default_model_key)
    candidate_partition = str(tenant_model_key(tenant, candidate))

    def publish_run_finished() -> None:
        create_run_for_test(
            instance,
            job_name="model_publish",
            status=dg.DagsterRunStatus.SUCCESS,
            tags={
                "dagster/partition": candidate_partition,
                "dagster/partition/tenant": tenant,
                "dagster/partition/embedding_model": candidate,
            },
        )

    with dg.instance_for_test() as instance:
        ticks = Ticks(instance, index_prefix, monkeypatch)
        t0 = 5_000_000.0
        _first_evaluation(ticks, tenant, partition, t0)
        publish_run_finished()
        assert ticks.at(t0 + 2 * DEBOUNCE, tenant) == []
        assert ticks.at(t0 + 3 * DEBOUNCE, tenant) == [candidate_partition]
        publish_run_finished()  # nothing new published since
        assert ticks.at(t0 + 4 * DEBOUNCE, tenant) == []
        assert ticks.at(t0 + 5 * DEBOUNCE, tenant) == []


@pytest.fixture
def beir_tenant(platform: Platform, tmp_path: Path) -> tuple[str, str]:
    """A tenant holding a tiny BEIR corpus with its suite; (tenant, serving model)."""
    from evals.retrieval import write_corpus
    from tests.e2e.test_eval_retrieval import _beir

    folder = _beir(tmp_path / "tiny")
    tenant = f"ev-{uuid.uuid4().hex[:8]}"
    model = platform.settings.default_model_key
    platform.catalog.ensure_tenant(tenant, tenant, model)
    write_corpus(folder, platform.settings.inbox_dir, tenant)
    PostgresEvalRuns(platform.pool).set_suite(
        tenant, EvalSuite(beir_folder=str(folder), split="test")
    )
    return tenant, model


def _evaluate(instance: dg.DagsterInstance, index_prefix: str, tenant: str, model: str) -> None:
    """A real evaluation run of the tenant x model, as the sensor's or the CLI's would be."""
    from assets.evals import retrieval_quality

    evaluation = dg.materialize(
        ALL_ASSETS,
        selection=[retrieval_quality],
        partition_key=tenant_model_key(tenant, model),
        instance=instance,
        resources={"groundwork": resource(index_prefix)},
    )
    assert evaluation.success


def test_an_evaluation_does_not_itself_request_another(
    platform: Platform,
    index_prefix: str,
    beir_tenant: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What an evaluation writes (its run, its report, the tenant's fusion
    setting) is not what the tenant serves: a real evaluation, requested by
    the sensor, is not followed by another one."""
    from tests.e2e.helpers import run_pipeline

    tenant, model = beir_tenant
    with dg.instance_for_test() as instance:
        run_pipeline(instance, tenant, model, resource(index_prefix))
        ticks = Ticks(instance, index_prefix, monkeypatch)
        t0 = 6_000_000.0
        assert ticks.at(t0, tenant) == []
        [partition] = ticks.at(t0 + DEBOUNCE, tenant)
        _evaluate(instance, index_prefix, tenant, model)
        assert PostgresEvalRuns(platform.pool).latest(tenant, model) is not None
        for later in (DEBOUNCE, 2 * DEBOUNCE, 10 * DEBOUNCE):
            assert ticks.at(t0 + DEBOUNCE + later, tenant) == []


def test_an_evaluation_someone_else_ran_counts_for_the_state_it_saw(
    platform: Platform,
    index_prefix: str,
    beir_tenant: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The demo evaluates its tenants itself (the CLI's run, visible in Dagster)
    while the sensor, which met them first, waits out the quiet interval: the
    sensor then evaluated the same served state a second time (three more runs
    and most of a core for minutes). An evaluation counts for the state it
    saw, whoever started it; a later change is still evaluated."""
    from tests.e2e.helpers import run_pipeline

    tenant, model = beir_tenant
    with dg.instance_for_test() as instance:
        run_pipeline(instance, tenant, model, resource(index_prefix))
        ticks = Ticks(instance, index_prefix, monkeypatch)
        t0 = 7_000_000.0
        assert ticks.at(t0, tenant) == []  # met, never evaluated: waits for quiet
        _evaluate(instance, index_prefix, tenant, model)  # not requested by the sensor
        for later in (DEBOUNCE, 2 * DEBOUNCE, 10 * DEBOUNCE):
            assert ticks.at(t0 + later, tenant) == []
        _add_note(platform, tenant, "later.md")
        publish_registered(platform, tenant)
        t1 = t0 + 20 * DEBOUNCE
        assert ticks.at(t1, tenant) == []
        assert ticks.at(t1 + DEBOUNCE, tenant) == [str(tenant_model_key(tenant, model))]
