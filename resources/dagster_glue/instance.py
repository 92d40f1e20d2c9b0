"""Dagster's instance (runs, events, schedules) in the platform's PostgreSQL.

dagster-postgres goes through SQLAlchemy; with SQLAlchemy 2.1 a bare
`postgresql://` URL selects psycopg 3 and the first event write fails on
NOTIFY, so the URL names psycopg2 explicitly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml

from resources.composition.engine_auth import dagster_postgres_storage
from resources.postgres.database import ensure_database


def dagster_storage_url(server_url: str, database: str = "dagster") -> str:
    url = ensure_database(server_url, database)
    return url.replace("postgresql://", "postgresql+psycopg2://", 1)


def instance_storage(database_url: str) -> dict[str, Any]:
    """Dagster's storage block for the platform database at `database_url`.

    A URL naming a passfile is an authenticated database (a listener beyond
    loopback, or GROUNDWORK_DATABASE_URL with a password): the passfile is this
    host's, so dagster.yaml names the password's environment variable instead,
    which every host (the daemon's, each worker's) resolves from its own
    environment. Without one, today's plain URL."""
    if "passfile" in dict(parse_qsl(urlsplit(database_url).query)):
        return dagster_postgres_storage(database_url)
    return {"postgres_url": database_url.replace("postgresql://", "postgresql+psycopg2://", 1)}


def write_instance_config(
    dagster_home: Path,
    server_url: str,
    database: str = "dagster",
    compute_logs: dict[str, Any] | None = None,
) -> Path:
    """`compute_logs`: where steps' stdout and stderr go (object_compute_logs:
    the object store, so a worker host's steps are readable from the run
    host's UI); None keeps Dagster's local files."""
    dagster_home.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        # dagster-postgres's storage with its connections pooled
        # (resources/dagster_glue/pooled_storage.py): one connection per call cost
        # every run a few hundred connection set-ups
        "storage": {
            "custom": {
                "module": "resources.dagster_glue.pooled_storage",
                "class": "PooledPostgresStorage",
                "config": instance_storage(ensure_database(server_url, database)),
            }
        },
        "telemetry": {"enabled": False},
        "nux": {"enabled": False},
        # The queue is polled every second (default 5 s): queueing otherwise added
        # up to 5 s to every run's freshness. One run per partition at a time,
        # whoever asked for it (a sensor, the API's ingest trigger, the UI):
        # Dagster's queue holds the next one until the current one ends.
        "run_coordinator": {
            "module": "dagster.core.run_coordinator",
            "class": "QueuedRunCoordinator",
            "config": {"dequeue_interval_seconds": 1},
        },
        # Run workers are forked from a forkserver that has imported the heavy
        # packages once (pipelines/warm_launcher.py): ~2.5 s less per run.
        "run_launcher": {"module": "pipelines.warm_launcher", "class": "WarmRunLauncher"},
        # Runs stuck starting, cancelling or running past an hour are failed by
        # the daemon, and so is a run whose worker died (the warm launcher
        # answers Dagster's worker health check).
        "run_monitoring": {
            "enabled": True,
            "start_timeout_seconds": 120,
            "cancel_timeout_seconds": 120,
            "max_runtime_seconds": 3600,
            "poll_interval_seconds": 10,
            # A run killed inside a pooled step never releases its slot: without
            # this, one dead worker blocked every later embedding step (seen:
            # "Step blocked by limit for pool embedding" after a kill -9).
            "free_slots_after_run_end_seconds": 5,
        },
        "concurrency": {
            "runs": {
                "max_concurrent_runs": 4,
                "tag_concurrency_limits": [
                    {
                        "key": "dagster/partition",
                        "value": {"applyLimitPerUniqueValue": True},
                        "limit": 1,
                    }
                ],
            },
            # One slot per pool: extraction (CPU-bound) and embedding each have
            # their own pool, so neither queues behind the other.
            "pools": {"default_limit": 1},
        },
    }
    if compute_logs is not None:
        config["compute_logs"] = compute_logs
    path = dagster_home / "dagster.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
