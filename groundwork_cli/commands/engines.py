"""`groundwork engines start|stop|status`: the embedded PostgreSQL and OpenSearch."""

from __future__ import annotations

import argparse

from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    engines = subcommands.add_parser("engines", help="start, stop or show the embedded engines")
    engines.add_argument("action", choices=["start", "stop", "status"])
    engines.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from resources.composition.platform import embedded_opensearch, ensure_engines
    from resources.engines.postgres import EmbeddedPostgres

    settings = GroundworkSettings.from_env()
    if args.action == "start":
        endpoints = ensure_engines(settings)
        console.print(f"PostgreSQL: {endpoints.server_url}\nOpenSearch: {endpoints.opensearch_url}")
    elif args.action == "stop":
        embedded_opensearch(settings).stop()
        EmbeddedPostgres(settings.pgdata).stop()
        console.print("stopped")
    else:
        console.print(
            f"PostgreSQL running: {EmbeddedPostgres(settings.pgdata).is_running()}\n"
            f"OpenSearch running: {embedded_opensearch(settings).is_running()}"
        )
    return 0
