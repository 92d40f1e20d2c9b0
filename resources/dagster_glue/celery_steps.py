"""Steps on several hosts: Dagster's own Celery executor (dagster-celery) and
the Celery app its workers run, configured once here so the run (which sends
steps) and every worker (which runs them) agree.

Why these Celery settings (measured in docs/several-hosts.md):

- `task_acks_late` + `task_reject_on_worker_lost`: a step's message is
  acknowledged only after the step ran. A worker host killed mid-step never
  acknowledges it, so the broker hands the step to another worker; with the
  default (ack on receipt) the step was lost and the run waited forever.
- `visibility_timeout`: with Redis, an unacknowledged message returns to the
  queue that long after it was delivered (Redis cannot see a consumer die; a
  RabbitMQ broker would requeue at once). It must exceed the longest step,
  or a step still running is handed out a second time (harmless, since every
  step is idempotent, but wasted). Shards are sized to stay well under it.
- `worker_prefetch_multiplier` 1: a worker holds one step at a time, so an
  idle worker takes the next shard instead of one busy worker hoarding it.
- results in the same Redis (not `rpc://`): a result survives the sending
  run's reconnects.

The broker URL comes from the environment (GROUNDWORK_BROKER_URL) through
Dagster's `EnvVar`-style config (`{"env": ...}`), never spelled in run
configuration or in `dagster.yaml`.
"""

from __future__ import annotations

import os
from typing import Any

from dagster_celery import celery_executor
from dagster_celery.config import DEFAULT_CONFIG, dict_wrapper
from dagster_celery.make_app import make_app
from dagster_celery.tasks import create_task

BROKER_ENV = "GROUNDWORK_BROKER_URL"
#: seconds after which Redis hands an unacknowledged step to another worker
VISIBILITY_TIMEOUT_ENV = "GROUNDWORK_STEP_VISIBILITY_SECONDS"
DEFAULT_VISIBILITY_TIMEOUT = 600
#: the queue every Groundwork worker listens on (dagster-celery's default)
QUEUE = "dagster"


def visibility_timeout() -> int:
    return int(os.environ.get(VISIBILITY_TIMEOUT_ENV, str(DEFAULT_VISIBILITY_TIMEOUT)))


def celery_settings(visibility_seconds: int | None = None) -> dict[str, Any]:
    """The Celery settings both sides use (see the module docstring)."""
    seconds = visibility_seconds or visibility_timeout()
    return {
        **DEFAULT_CONFIG,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        # the step's stdout and stderr stay the process's streams: Celery's
        # default replaces them with a proxy to its own logger, past which
        # Dagster's capture of a step's output (the compute logs the run
        # host's UI reads from the object store) recorded nothing
        "worker_redirect_stdouts": False,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            **dict(DEFAULT_CONFIG["broker_transport_options"]),  # type: ignore[call-overload]
            "visibility_timeout": seconds,
            # sweep for abandoned steps every second (kombu's default: ~100 s)
            "unacked_restore_interval": 1,
            "unacked_restore_throttle": 1,
        },
        "result_backend_transport_options": {"visibility_timeout": seconds},
        "result_expires": 86400,
    }


def broker_configured() -> bool:
    """Worker hosts are configured where a broker is: read at the caller's
    tick (a sensor's), never at import."""
    return bool(os.environ.get(BROKER_ENV))


def distributed_executor(visibility_seconds: int = DEFAULT_VISIBILITY_TIMEOUT) -> Any:
    """Dagster's Celery executor, its broker and result store named by
    GROUNDWORK_BROKER_URL (read where the run executes, not at import). The
    visibility timeout that matters is the workers' (they restore abandoned
    steps); this side's only has to be valid."""
    return celery_executor.configured(
        {
            "broker": {"env": BROKER_ENV},
            "backend": {"env": BROKER_ENV},
            "config_source": celery_settings(visibility_seconds),
        },
        name="groundwork_celery",
    )


def worker_app(broker_url: str, visibility_seconds: int | None = None) -> Any:
    """The Celery app a worker runs: dagster-celery's step task, our settings."""
    app = make_app(
        {
            "broker": broker_url,
            "backend": broker_url,
            "include": [],
            "config_source": dict_wrapper(celery_settings(visibility_seconds)),
        }
    )
    create_task(app)
    return app


def run_worker(
    broker_url: str, name: str, concurrency: int = 1, visibility_seconds: int | None = None
) -> None:
    """Run a Celery worker in this process until it is stopped. `solo` with
    one slot: the step runs in this process, so what it loads (the platform's
    pools, the embedding model) stays loaded for the next step; `prefork`
    children (concurrency > 1) each keep their own, also for their lifetime."""
    app = worker_app(broker_url, visibility_seconds)
    pool = ["--pool", "solo"] if concurrency == 1 else ["--pool", "prefork"]
    app.worker_main(
        argv=[
            "worker",
            "--queues",
            QUEUE,
            "--hostname",
            f"{name}@%h",
            "--concurrency",
            str(concurrency),
            *pool,
            "--prefetch-multiplier",
            "1",
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "INFO",
        ]
    )
