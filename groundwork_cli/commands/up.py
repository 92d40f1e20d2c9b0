"""`groundwork up`: start the engines, Dagster and the API until Ctrl-C."""

from __future__ import annotations

import argparse

from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    subcommands.add_parser(
        "up", help="start engines, Dagster and the API until Ctrl-C"
    ).set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from groundwork_cli.supervisor import AlreadyRunning, Supervisor

    supervisor = Supervisor(GroundworkSettings.from_env())
    try:
        supervisor.start_engines()
    except AlreadyRunning as exc:
        console.print(f"[red]{exc}[/]")
        return 1
    try:
        supervisor.start_services()
        supervisor.wait_for_interrupt()
        return 0
    finally:
        supervisor.stop()
