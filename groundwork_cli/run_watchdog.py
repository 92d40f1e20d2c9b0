"""Failing the runs a previous session left unfinished.

A run whose worker dies while the platform is up is Dagster's to notice: the
warm run launcher answers Dagster's worker health check (the worker's pid),
and the daemon's run monitoring fails the run (pipelines/warm_launcher.py).
What Dagster cannot know is that the whole platform restarted: at start-up
no worker of an earlier session can still be running (they are children of
its daemon's forkserver), so every run still marked unfinished is reported
failed at once rather than after a health check, and its partition is picked
up by the next sensor tick.
"""

from __future__ import annotations

import dagster as dg

UNFINISHED = [
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.CANCELING,
]


def fail_runs_of_an_earlier_session(instance: dg.DagsterInstance) -> list[str]:
    """Report failed every unfinished run; return their ids (call at start-up only)."""
    failed: list[str] = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=UNFINISHED)):
        instance.report_run_failed(
            run,
            "Marked failed by the Groundwork supervisor: the platform restarted; "
            "no worker of an earlier session is running.",
        )
        failed.append(run.run_id)
    return failed
