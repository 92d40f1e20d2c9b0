"""Where a distributed run's steps ran, read from its Dagster events: what a
fault test or bench needs to kill the worker host that holds a shard."""

from __future__ import annotations

from typing import Any

import dagster as dg

#: the step key of an indexing shard (a mapped step of index_shards)
SHARD_STEP = "ingest_shard["


def celery_worker_of(entry: dg.EventLogEntry) -> str | None:
    """The worker a step was handed to (its `--name`), from dagster-celery's
    engine event; None for every other event."""
    event = entry.dagster_event
    if event is None or event.event_type_value != "ENGINE_EVENT":
        return None
    metadata = event.engine_event_data.metadata if event.engine_event_data else {}
    value = metadata.get("Celery worker")
    return None if value is None else str(value.value).split("@")[0]


def first_shard_on_a_worker(instance: Any, tenant: str) -> tuple[str, str, str] | None:
    """(run id, step key, worker name) of the first shard of the tenant's
    latest run that a worker took, or None while none has."""
    runs = instance.get_runs(dg.RunsFilter(tags={"dagster/partition": tenant}), limit=1)
    for entry in instance.all_logs(runs[0].run_id) if runs else []:
        name = celery_worker_of(entry)
        if name and SHARD_STEP in (entry.step_key or ""):
            return runs[0].run_id, str(entry.step_key), name
    return None
