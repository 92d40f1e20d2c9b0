"""`groundwork search QUERY --key KEY`: query the running API, print its JSON."""

from __future__ import annotations

import argparse

import httpx

from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    search = subcommands.add_parser("search", help="query the running API")
    search.add_argument("query")
    search.add_argument("--key", required=True)
    search.add_argument("--limit", type=int, default=5)
    search.add_argument("--mode", choices=["hybrid", "vector", "keyword"], default="hybrid")
    search.add_argument(
        "--layer",
        choices=["raw", "summary", "summary_first", "auto"],
        default="raw",
        help="summary: compiled summary pages; summary_first: summaries pick the sources; "
        "auto: raw or summary_first, as the router reads the query",
    )
    search.add_argument("--api")
    search.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = GroundworkSettings.from_env()
    api = args.api or f"http://127.0.0.1:{settings.api_port}"
    response = httpx.post(
        f"{api}/v1/search",
        json={
            "query": args.query,
            "limit": args.limit,
            "mode": args.mode,
            "layer": args.layer,
        },
        headers={"Authorization": f"Bearer {args.key}"},
        timeout=30,
    )
    console.print_json(response.text)
    return 0 if response.status_code == 200 else 1
