"""The warm run launcher: a run worker forked from a preloaded forkserver runs
Dagster's own run entry point, and Dagster's run monitoring learns when that
worker is gone."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import dagster as dg
from dagster._core.launcher import LaunchRunContext, WorkerStatus

from pipelines.warm_launcher import WORKER_PID_TAG, WarmRunLauncher
from tests.e2e.warm_launcher_jobs import worker_report_job

LAUNCHER = {"module": "pipelines.warm_launcher", "class": "WarmRunLauncher"}


def _launch(instance: dg.DagsterInstance, out: Path, sleep: float) -> dg.DagsterRun:
    run = instance.create_run_for_job(
        job_def=worker_report_job,
        run_config={"ops": {"report_worker": {"config": {"out": str(out), "sleep": sleep}}}},
        job_code_origin=dg.reconstructable(worker_report_job).get_python_origin(),
    )
    launcher = instance.run_launcher
    assert isinstance(launcher, WarmRunLauncher)
    launcher.launch_run(LaunchRunContext(dagster_run=run, workspace=None))
    return run


def _wait_for(instance: dg.DagsterInstance, run_id: str, *statuses: dg.DagsterRunStatus) -> None:
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        if run is not None and run.status in statuses:
            return
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} never reached {statuses}")


def test_a_run_executes_in_a_preloaded_worker_and_succeeds(tmp_path: Path) -> None:
    with dg.instance_for_test(overrides={"run_launcher": LAUNCHER}) as instance:
        out = tmp_path / "worker.json"
        run = _launch(instance, out, sleep=0)
        _wait_for(instance, run.run_id, dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE)
        finished = instance.get_run_by_id(run.run_id)
        assert finished is not None and finished.status == dg.DagsterRunStatus.SUCCESS
        report = json.loads(out.read_text())
        assert report["pid"] != os.getpid()
        assert str(report["pid"]) == finished.tags[WORKER_PID_TAG]
        # the step found the parsers already imported: the worker was warm
        assert report["preloaded"] is True


def test_run_monitoring_learns_that_a_killed_worker_is_gone(tmp_path: Path) -> None:
    with dg.instance_for_test(overrides={"run_launcher": LAUNCHER}) as instance:
        out = tmp_path / "worker.json"
        run = _launch(instance, out, sleep=60)
        deadline = time.monotonic() + 60
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        launcher = instance.run_launcher
        started = instance.get_run_by_id(run.run_id)
        assert started is not None
        assert launcher.check_run_worker_health(started).status == WorkerStatus.RUNNING
        os.kill(json.loads(out.read_text())["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if launcher.check_run_worker_health(started).status == WorkerStatus.FAILED:
                break
            time.sleep(0.1)
        assert launcher.check_run_worker_health(started).status == WorkerStatus.FAILED


def test_a_code_change_on_disk_starts_the_next_run_cold(tmp_path: Path, monkeypatch) -> None:
    """A long-lived forkserver must never serve code older than what is on disk."""
    import pipelines.warm_launcher as warm_launcher

    with dg.instance_for_test(overrides={"run_launcher": LAUNCHER}) as instance:
        first = _launch(instance, tmp_path / "first.json", sleep=0)
        _wait_for(instance, first.run_id, dg.DagsterRunStatus.SUCCESS)
        monkeypatch.setattr(warm_launcher, "code_fingerprint", lambda: "changed on disk")
        second = _launch(instance, tmp_path / "second.json", sleep=0)
        _wait_for(instance, second.run_id, dg.DagsterRunStatus.SUCCESS)
        messages = [
            record.message
            for record in instance.all_logs(second.run_id)
            if "Run worker" in (record.message or "")
        ]
        assert any("started cold" in m for m in messages), messages
        # the cold worker imported the parsers itself: nothing was preloaded
        assert json.loads((tmp_path / "second.json").read_text())["preloaded"] is False
