"""Failing Dagster runs whose worker process is gone.

Dagster's run monitoring (on in the generated dagster.yaml) fails runs stuck
starting or past their max runtime, but the default run launcher cannot check
a worker's health, so a run whose worker was killed would stay STARTED for
the whole max runtime, and the sensors would treat its partition as busy. The
worker's pid is in the run's own "Started process for run" event; a run whose
pid no longer exists is reported failed, and its partition is picked up by the
next sensor tick. At start-up of the platform no worker of a previous session
can be alive, so every unfinished run is failed.
"""

from __future__ import annotations

import os

import dagster as dg

UNFINISHED = [
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.CANCELING,
]


def _worker_pid(instance: dg.DagsterInstance, run_id: str) -> int | None:
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, limit=50
    ).records
    for record in records:
        event = record.event_log_entry.dagster_event
        data = getattr(event, "event_specific_data", None) if event else None
        metadata = getattr(data, "metadata", None) or {}
        pid = metadata.get("pid")
        if pid is not None:
            return int(getattr(pid, "value", pid))
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fail_runs_with_dead_workers(
    instance: dg.DagsterInstance, at_startup: bool = False
) -> list[str]:
    """Report failed every unfinished run whose worker is gone; return their ids."""
    failed: list[str] = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=UNFINISHED)):
        if at_startup:
            why = "the platform restarted; no worker of an earlier session is running"
        else:
            pid = _worker_pid(instance, run.run_id)
            if pid is None or _alive(pid):
                continue
            why = f"its run worker (pid {pid}) is gone"
        instance.report_run_failed(run, f"Marked failed by the Groundwork supervisor: {why}.")
        failed.append(run.run_id)
    return failed
