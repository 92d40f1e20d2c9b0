"""`groundwork demo --exit` stops only when the runs the demo caused are over:
stopping the launcher under a starting run left it "Failed to start"."""

from __future__ import annotations

import threading
import time
import uuid

import dagster as dg

from groundwork_cli.commands.demo import _wait_for_runs


def _run(instance: dg.DagsterInstance, status: dg.DagsterRunStatus) -> str:
    run_id = uuid.uuid4().hex
    instance.add_run(dg.DagsterRun(job_name="tenant_ingest", run_id=run_id, status=status))
    return run_id


def test_the_exit_waits_for_a_run_in_progress_then_for_quiet() -> None:
    with dg.instance_for_test() as instance:
        _run(instance, dg.DagsterRunStatus.SUCCESS)  # finished runs do not hold it
        active = _run(instance, dg.DagsterRunStatus.STARTED)
        threading.Timer(1.5, lambda: instance.delete_run(active)).start()
        started = time.monotonic()
        _wait_for_runs(instance, timeout=20, settle=0.5)
        assert 1.5 <= time.monotonic() - started < 10


def test_the_exit_gives_up_after_its_bound() -> None:
    with dg.instance_for_test() as instance:
        _run(instance, dg.DagsterRunStatus.STARTING)
        started = time.monotonic()
        _wait_for_runs(instance, timeout=2, settle=0.5)
        assert 2 <= time.monotonic() - started < 6
