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
