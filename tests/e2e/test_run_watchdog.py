"""A run whose worker died is marked failed within a bounded time (issue 18):
the default run launcher cannot check worker health, so Dagster's run
monitoring alone would leave it STARTED until its max runtime; the watchdog
reads the worker's pid from the run's own events."""

from __future__ import annotations

import os
import subprocess
import uuid

import dagster as dg
from dagster._core.events import EngineEventData

from groundwork_cli.run_watchdog import fail_runs_with_dead_workers


def _started_run(instance: dg.DagsterInstance, pid: int | None) -> str:
    run_id = uuid.uuid4().hex
    run = instance.add_run(
        dg.DagsterRun(
            job_name="tenant_ingest",
            run_id=run_id,
            status=dg.DagsterRunStatus.STARTED,
            tags={"dagster/partition": "acme"},
        )
    )
    if pid is not None:
        instance.report_engine_event(
            f"Started process for run (pid: {pid}).", run, EngineEventData.in_process(pid)
        )
    return run_id


def test_runs_whose_worker_died_are_failed_and_live_ones_are_left_alone() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    with dg.instance_for_test() as instance:
        gone = _started_run(instance, dead.pid)
        alive = _started_run(instance, os.getpid())
        unknown = _started_run(instance, None)  # no worker event yet: not judged
        failed = fail_runs_with_dead_workers(instance)
        assert failed == [gone]
        statuses = {r: instance.get_run_by_id(r).status for r in (gone, alive, unknown)}  # type: ignore[union-attr]
        assert statuses == {
            gone: dg.DagsterRunStatus.FAILURE,
            alive: dg.DagsterRunStatus.STARTED,
            unknown: dg.DagsterRunStatus.STARTED,
        }
        # at start-up nothing of a previous session can still be running
        assert set(fail_runs_with_dead_workers(instance, at_startup=True)) == {alive, unknown}
