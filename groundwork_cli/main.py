"""`groundwork` CLI. The README's first command runs `groundwork demo`.

Parsing and dispatch only: each subcommand is a module in
`groundwork_cli/commands/` with a `register(subcommands)` function; adding a
command is that module and its name in COMMANDS.
"""

from __future__ import annotations

import argparse
import importlib
import sys

DESCRIPTION = "`groundwork` CLI. The README's first command runs `groundwork demo`."

#: every subcommand's module in groundwork_cli/commands/, in the order --help lists them
COMMANDS = (
    "demo",
    "up",
    "engines",
    "tenant",
    "source",
    "key",
    "upload",
    "search",
    "model",
    "mcp",
    "eval",
    "blobs",
    "worker",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="groundwork", description=DESCRIPTION)
    subcommands = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"groundwork_cli.commands.{name}").register(subcommands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
