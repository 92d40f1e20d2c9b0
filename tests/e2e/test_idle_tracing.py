"""Idle costs nothing (issue #33): with tracing off (no GROUNDWORK_OTLP_ENDPOINT)
the code location has no run_traces_sensor, so Dagster's daemon has nothing
to evaluate for it: it used to tick every minute forever on every install
that never turned tracing on (a daemon evaluation, a gRPC call to the code
server, a tick row written). With tracing configured the sensor is there and
running by default, as before.

The code location is built as Dagster builds it: `pipelines.definitions.defs`
is a `@dg.definitions` function that Dagster calls when it loads the code
location (code server, run worker), never at import.
"""

from __future__ import annotations

import dagster as dg
import pytest

from pipelines.definitions import defs

SENSOR = "run_traces_sensor"


def _sensors() -> dict[str, dg.SensorDefinition]:
    return {s.name: s for s in defs().get_repository_def().sensor_defs}


def test_with_tracing_off_the_code_location_has_no_trace_sensor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GROUNDWORK_OTLP_ENDPOINT", raising=False)
    sensors = _sensors()
    assert SENSOR not in sensors
    assert {"inbox_sensor", "pending_work_sensor"} <= set(sensors)  # the rest is all there


def test_with_tracing_on_the_trace_sensor_runs_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GROUNDWORK_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    sensor = _sensors()[SENSOR]
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert sensor.minimum_interval_seconds == 60


def test_under_the_supervisors_watcher_the_inbox_sensor_ticks_once_a_fallback_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The inbox sensor was evaluated on every pass of the sensor daemon (~5 s)
    to find, 11 times in 12, that the supervisor's watcher had already asked
    for the runs: 12 of the idle stack's ~31 ticks a minute, each a daemon
    evaluation, a gRPC call and a tick row. Where the supervisor runs the
    watcher (it tells its children so) the sensor is the fallback walk only
    and ticks once per INBOX_FALLBACK_SECONDS; without one it stays as quick
    as the daemon."""
    from groundwork.connectors.inbox import INBOX_FALLBACK_SECONDS
    from groundwork_cli.supervisor import Supervisor
    from resources.composition.settings import GroundworkSettings

    monkeypatch.delenv("GROUNDWORK_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("GROUNDWORK_INBOX_WATCHER", raising=False)
    assert _sensors()["inbox_sensor"].minimum_interval_seconds == 1
    supervised = Supervisor(GroundworkSettings.from_env()).environment()
    monkeypatch.setenv("GROUNDWORK_INBOX_WATCHER", supervised["GROUNDWORK_INBOX_WATCHER"])
    assert _sensors()["inbox_sensor"].minimum_interval_seconds == INBOX_FALLBACK_SECONDS


def test_where_the_api_requests_ingest_runs_the_pending_work_sensor_is_a_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pending_work_sensor ticked every 15 s to find, nearly always, nothing: in
    the supervised stack the API, the MCP tools and the connectors request a
    tenant's run through Dagster as they store work (GROUNDWORK_DAGSTER_URL,
    which the supervisor gives its children). There it is the fallback for
    work stored some other way (a model switch's backfill, a run that failed)
    and ticks once a minute; without an orchestrator URL it stays quick."""
    from groundwork_cli.supervisor import Supervisor
    from pipelines.sensors import PENDING_WORK_FALLBACK_SECONDS, PENDING_WORK_TICK_SECONDS
    from resources.composition.settings import GroundworkSettings

    monkeypatch.delenv("GROUNDWORK_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("GROUNDWORK_DAGSTER_URL", raising=False)
    assert _sensors()["pending_work_sensor"].minimum_interval_seconds == PENDING_WORK_TICK_SECONDS
    supervised = Supervisor(GroundworkSettings.from_env()).environment()
    monkeypatch.setenv("GROUNDWORK_DAGSTER_URL", supervised["GROUNDWORK_DAGSTER_URL"])
    sensor = _sensors()["pending_work_sensor"]
    assert sensor.minimum_interval_seconds == PENDING_WORK_FALLBACK_SECONDS == 60
    assert PENDING_WORK_TICK_SECONDS == 15
    assert {j.name for j in sensor.jobs} == {"tenant_ingest", "tenant_ingest_distributed"}


def test_the_connector_and_deletion_sensors_tick_at_the_idle_budgets_pace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Idle, the demo's daemon made ~20 sensor ticks a minute, each a daemon
    evaluation, a gRPC call and a tick row: the four connector kinds' sensors
    were 8 of them (every 30 s, for connectors whose own pass interval is 300 s
    by default) and the deletion sensor 4 (every 15 s, purging sources that are
    already unsearchable). Once a minute and twice a minute keep a connector's
    pass within a minute of due and a purge within half a minute."""
    monkeypatch.delenv("GROUNDWORK_OTLP_ENDPOINT", raising=False)
    sensors = _sensors()
    connector = [s for name, s in sensors.items() if name.endswith("_connector_sensor")]
    assert len(connector) == 4
    assert {s.minimum_interval_seconds for s in connector} == {60}
    assert sensors["deletion_sensor"].minimum_interval_seconds == 30


def test_the_evaluation_partition_and_after_pass_sensors_tick_once_a_minute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Idle, the SciFact + 99 tenants stack made 13.6 sensor ticks a minute
    (Dagster's tick rows over 30 minutes), 8 of them from four sensors at 30 s:
    evaluate_after_publish, whose debounce (not its tick) spaces evaluations;
    tenant_partitions_sensor, whose partitions the inbox sensor and the
    connector passes also add as they request a new tenant's run; and
    connector_ingest_sensor, the fallback behind a pass's own ingest request.
    Once a minute each: 10.6 ticks a minute. The deletion sensor keeps its
    half minute (a purge is erasure)."""
    from pipelines.sensors import EVALUATION_TICK_SECONDS

    monkeypatch.delenv("GROUNDWORK_OTLP_ENDPOINT", raising=False)
    sensors = _sensors()
    assert EVALUATION_TICK_SECONDS == 60
    for name in ("evaluate_after_publish", "tenant_partitions_sensor", "connector_ingest_sensor"):
        assert sensors[name].minimum_interval_seconds == 60, name
    assert sensors["deletion_sensor"].minimum_interval_seconds == 30
