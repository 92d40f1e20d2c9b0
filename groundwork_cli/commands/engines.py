"""`groundwork engines start|stop|status`: the embedded PostgreSQL and OpenSearch
(and SeaweedFS, with GROUNDWORK_BLOB_BACKEND=s3 and no GROUNDWORK_S3_ENDPOINT)."""

from __future__ import annotations

import argparse

from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    engines = subcommands.add_parser("engines", help="start, stop or show the embedded engines")
    engines.add_argument("action", choices=["start", "stop", "status"])
    engines.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from resources.composition.blobs import embedded_seaweedfs
    from resources.composition.platform import embedded_opensearch, ensure_engines
    from resources.engines.postgres import EmbeddedPostgres

    settings = GroundworkSettings.from_env()
    if args.action == "start":
        endpoints = ensure_engines(settings)
        console.print(f"PostgreSQL: {endpoints.server_url}\nOpenSearch: {endpoints.opensearch_url}")
        if endpoints.s3_endpoint:
            console.print(f"S3: {endpoints.s3_endpoint}")
    elif args.action == "stop":
        embedded_opensearch(settings).stop()
        embedded_seaweedfs(settings).stop()  # nothing to do when it was never started
        EmbeddedPostgres(settings.pgdata).stop()
        console.print("stopped")
    else:
        console.print(
            f"PostgreSQL running: {EmbeddedPostgres(settings.pgdata).is_running()}\n"
            f"OpenSearch running: {embedded_opensearch(settings).is_running()}\n"
            f"SeaweedFS running: {embedded_seaweedfs(settings).has_process()}"
        )
    return 0
