"""A run whose worker died is failed by Dagster's run monitoring, through the
warm launcher's worker health check (issue 18's defect: the default launcher
could not check worker health, so such a run stayed STARTED for its whole max
runtime). The check finds the worker by the launcher's pid tag, or by the
run's own worker event for runs executed elsewhere (the CLI's in-process
runs). At start-up the supervisor fails every run an earlier session left
unfinished."""

from __future__ import annotations

import os
import subprocess
import uuid

import dagster as dg
from dagster._core.events import EngineEventData
from dagster._core.launcher import WorkerStatus

from groundwork_cli.run_watchdog import fail_runs_of_an_earlier_session
from pipelines.warm_launcher import WORKER_PID_TAG

LAUNCHER = {"module": "pipelines.warm_launcher", "class": "WarmRunLauncher"}


def _started_run(
    instance: dg.DagsterInstance, pid: int | None, tagged: bool = False
) -> dg.DagsterRun:
    tags = {"dagster/partition": "acme"}
    if tagged and pid is not None:
        tags[WORKER_PID_TAG] = str(pid)
    run = instance.add_run(
        dg.DagsterRun(
            job_name="tenant_ingest",
            run_id=uuid.uuid4().hex,
            status=dg.DagsterRunStatus.STARTED,
            tags=tags,
        )
    )
    if pid is not None and not tagged:
        instance.report_engine_event(
            f"Executing steps in process (pid: {pid}).", run, EngineEventData.in_process(pid)
        )
    return run


def test_dagster_learns_whose_worker_is_gone_and_leaves_the_living_alone() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    with dg.instance_for_test(overrides={"run_launcher": LAUNCHER}) as instance:
        launcher = instance.run_launcher
        cases = {
            "launched, worker gone": (_started_run(instance, dead.pid, tagged=True), "FAILED"),
            "in-process, worker gone": (_started_run(instance, dead.pid), "FAILED"),
            "launched, alive": (_started_run(instance, os.getpid(), tagged=True), "RUNNING"),
            "in-process, alive": (_started_run(instance, os.getpid()), "RUNNING"),
            "no worker event yet": (_started_run(instance, None), "RUNNING"),
        }
        seen = {
            name: launcher.check_run_worker_health(run).status.value
            for name, (run, _) in cases.items()
        }
        assert seen == {name: expected for name, (_, expected) in cases.items()}
        assert WorkerStatus.FAILED.value == "FAILED"


def test_at_start_up_every_unfinished_run_of_an_earlier_session_is_failed() -> None:
    with dg.instance_for_test() as instance:
        running = _started_run(instance, os.getpid())
        finished = instance.add_run(
            dg.DagsterRun(
                job_name="tenant_ingest",
                run_id=uuid.uuid4().hex,
                status=dg.DagsterRunStatus.SUCCESS,
            )
        )
        assert fail_runs_of_an_earlier_session(instance) == [running.run_id]
        statuses = {
            r: instance.get_run_by_id(r).status  # type: ignore[union-attr]
            for r in (running.run_id, finished.run_id)
        }
        assert statuses == {
            running.run_id: dg.DagsterRunStatus.FAILURE,
            finished.run_id: dg.DagsterRunStatus.SUCCESS,
        }
