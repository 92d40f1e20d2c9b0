"""`groundwork worker`: a worker host for the distributed ingest job
(tenant_ingest_distributed), joined by URLs alone.

It runs Dagster's Celery step worker (dagster-celery's `execute_plan` task,
resources/dagster_glue/celery_steps.py) against the broker in
GROUNDWORK_BROKER_URL, and reaches every store by URL: PostgreSQL
(GROUNDWORK_DATABASE_URL), OpenSearch (GROUNDWORK_OPENSEARCH_URL) and object
storage (GROUNDWORK_BLOB_BACKEND=s3 with GROUNDWORK_S3_ENDPOINT and its keys).
It refuses to start without them: a worker that fell back to an embedded
engine or a local blob folder would write where no other host looks. Its
GROUNDWORK_HOME is its own (a private folder when unset), holding nothing
another host needs.

Steps run in this process one at a time (Celery's solo pool), so the
platform's connection pools and the embedding model, loaded before the first
step (`--database`/`--index-prefix` name the code location's resource
configuration), stay loaded for every later step.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
from pathlib import Path

from resources.composition.settings import GroundworkSettings

REQUIRED = {
    "GROUNDWORK_BROKER_URL": "the broker the distributed executor sends steps through",
    "GROUNDWORK_DATABASE_URL": "PostgreSQL (catalog, vectors, Dagster's runs)",
}


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    worker = subcommands.add_parser(
        "worker", help="run ingest steps of the distributed job on this host (URLs only)"
    )
    worker.add_argument("--name", default=socket.gethostname(), help="this worker's name")
    worker.add_argument(
        "--database", default="", help="the resource's database (default GROUNDWORK_DATABASE_NAME)"
    )
    worker.add_argument("--index-prefix", default="", help="the resource's index prefix")
    worker.add_argument(
        "--no-preload", action="store_true", help="load the platform and model at the first step"
    )
    worker.set_defaults(func=run)


def missing_configuration(env: dict[str, str]) -> list[str]:
    """What keeps this host from joining by URLs alone (empty: nothing)."""
    missing = [f"{name} ({why})" for name, why in REQUIRED.items() if not env.get(name)]
    if env.get("GROUNDWORK_KEYWORD_BACKEND", "opensearch") == "opensearch" and not env.get(
        "GROUNDWORK_OPENSEARCH_URL"
    ):
        missing.append("GROUNDWORK_OPENSEARCH_URL (the keyword index)")
    if env.get("GROUNDWORK_BLOB_BACKEND") != "s3" or not env.get("GROUNDWORK_S3_ENDPOINT"):
        missing.append(
            "GROUNDWORK_BLOB_BACKEND=s3 and GROUNDWORK_S3_ENDPOINT (file bytes: a worker "
            "host has no shared disk)"
        )
    return missing


def run(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    missing = missing_configuration(env)
    if missing:
        print("groundwork worker joins by URLs; set:\n  " + "\n  ".join(missing), file=sys.stderr)
        return 2
    if not env.get("GROUNDWORK_HOME"):
        home = Path(tempfile.gettempdir()) / f"groundwork-worker-{args.name}-{os.getuid()}"
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.environ["GROUNDWORK_HOME"] = str(home)
    settings = GroundworkSettings.from_env()

    from resources.dagster_glue.celery_steps import BROKER_ENV, run_worker
    from resources.dagster_glue.platform_resource import GroundworkResource

    if not args.no_preload:
        platform = GroundworkResource(
            database=args.database, index_prefix=args.index_prefix
        ).platform()
        platform.embedder(settings.default_model_key).embed_documents(["warm"])
        print(
            f"worker {args.name}: platform and {settings.default_model_key} loaded "
            f"(pid {os.getpid()}, home {settings.home})",
            flush=True,
        )
    run_worker(os.environ[BROKER_ENV], args.name)
    return 0
