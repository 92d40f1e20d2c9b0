"""Traces of Dagster runs and steps, exported after each run ends.

Dagster records when every run and every step started and ended (its run and
step stats, in the instance's PostgreSQL); `run_traces_sensor` reads the runs
finished since its cursor and sends each as one trace: a `dagster.run <job>`
span with a `dagster.step <step>` child per step, at the times Dagster
recorded, failed steps marked as errors, tagged with the run id and the
tenant (the run's partition). Built from the record rather than from inside
the steps, so no step pays for it and a run killed mid-step still has its
trace. Off (no GROUNDWORK_OTLP_ENDPOINT) the code location has no such
sensor at all (`definitions`): a sensor that only skipped still cost a
daemon evaluation, a gRPC call and a tick row every minute, forever, on
every install that never turned tracing on. On, it uses the provider
resources/composition/tracing.py installs in the code server, sampled like
the API's traces.
"""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from groundwork.tracing import TENANT
from resources.composition.settings import GroundworkSettings
from resources.composition.tracing import start_tracing

FINISHED = [
    dg.DagsterRunStatus.SUCCESS,
    dg.DagsterRunStatus.FAILURE,
    dg.DagsterRunStatus.CANCELED,
]
#: runs sent per tick: a backlog after an outage drains over a few ticks
RUNS_PER_TICK = 50


def _ns(seconds: float | None, fallback: float) -> int:
    return int((seconds if seconds is not None else fallback) * 1e9)


def export_run(instance: dg.DagsterInstance, run: dg.DagsterRun, tracer: trace.Tracer) -> None:
    """One finished run as one trace (a run Dagster has no stats for is skipped)."""
    stats = instance.get_run_stats(run.run_id)
    if stats.start_time is None:
        return
    end = stats.end_time if stats.end_time is not None else stats.start_time
    attributes: dict[str, str] = {"dagster.run_id": run.run_id, "dagster.job": run.job_name}
    partition = run.tags.get("dagster/partition")
    if partition:
        attributes["dagster.partition"] = partition
        attributes[TENANT] = partition.split("|")[0]
    root = tracer.start_span(
        f"dagster.run {run.job_name}", start_time=_ns(stats.start_time, 0), attributes=attributes
    )
    if run.status != dg.DagsterRunStatus.SUCCESS:
        root.set_status(Status(StatusCode.ERROR, run.status.value))
    parent = trace.set_span_in_context(root)
    for step in instance.get_run_step_stats(run.run_id):
        child = tracer.start_span(
            f"dagster.step {step.step_key}",
            context=parent,
            start_time=_ns(step.start_time, stats.start_time),
            attributes={**attributes, "dagster.step": step.step_key},
        )
        if step.status is not None and step.status.value != "SUCCESS":
            child.set_status(Status(StatusCode.ERROR, step.status.value))
        child.end(end_time=_ns(step.end_time, end))
    root.end(end_time=_ns(end, end))


def export_finished_runs(
    instance: dg.DagsterInstance, cursor: str | None, tracer: trace.Tracer
) -> str | None:
    """Send the runs finished since `cursor` (an ISO time); return the new cursor."""
    after = datetime.fromisoformat(cursor) if cursor else None
    records = instance.get_run_records(
        dg.RunsFilter(statuses=FINISHED, updated_after=after),
        limit=RUNS_PER_TICK,
        order_by="update_timestamp",
        ascending=True,
    )
    for record in records:
        export_run(instance, record.dagster_run, tracer)
    if not records:
        return cursor
    last = records[-1].update_timestamp
    return (last if last.tzinfo else last.replace(tzinfo=UTC)).isoformat()


@dg.sensor(
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Sends each finished run and its steps as an OpenTelemetry trace "
    "(GROUNDWORK_OTLP_ENDPOINT); only in a code location loaded with tracing on.",
)
def run_traces_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
    provider = start_tracing(GroundworkSettings.from_env(), "groundwork-dagster")
    if provider is None:  # the settings changed under a running code location
        return dg.SkipReason("tracing is off (GROUNDWORK_OTLP_ENDPOINT unset)")
    if context.cursor is None:
        # the first tick starts from now: history before tracing was on is not sent
        return dg.SensorResult(cursor=datetime.now(UTC).isoformat())
    cursor = export_finished_runs(
        context.instance, context.cursor, provider.get_tracer("groundwork.dagster")
    )
    provider.force_flush()
    return dg.SensorResult(cursor=cursor)


def definitions(tracing: bool) -> dg.Definitions:
    """The sensor where tracing is configured, nothing where it is off (the
    code location decides when Dagster loads it: pipelines/definitions.py)."""
    return dg.Definitions(sensors=[run_traces_sensor]) if tracing else dg.Definitions()
