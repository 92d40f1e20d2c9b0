"""`groundwork mcp [--http]`: serve the agent tools over MCP."""

from __future__ import annotations

import argparse
import sys

from resources.composition.settings import GroundworkSettings


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = subcommands.add_parser("mcp", help="serve the agent tools over MCP (stdio, or --http)")
    mcp.add_argument("--key", help="API key for stdio (default: GROUNDWORK_API_KEY)")
    mcp.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    mcp.add_argument("--port", type=int, default=8089)
    mcp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve the tools over MCP: stdio (the key from --key or GROUNDWORK_API_KEY is
    the principal) or, with --http, streamable HTTP (a bearer key per request)."""
    import os

    from agent_tools.mcp_server import http_app, run_stdio
    from groundwork.tools.dispatch import ToolDispatcher
    from resources.composition.platform import connect

    settings = GroundworkSettings.from_env()
    platform = connect(settings, serving=True)
    dispatcher = ToolDispatcher(lambda: platform)
    try:
        if args.http:
            import uvicorn

            uvicorn.run(http_app(dispatcher), host="127.0.0.1", port=args.port, log_level="warning")
            return 0
        key = args.key or os.environ.get("GROUNDWORK_API_KEY", "")
        if not key or dispatcher.principal(key) is None:
            print("give a valid API key: --key KEY or GROUNDWORK_API_KEY", file=sys.stderr)
            return 2
        run_stdio(dispatcher, key)
        return 0
    finally:
        platform.close()
