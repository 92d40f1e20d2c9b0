"""A transport handler maps a request to a service call and never uses a port
itself: no HTTP route (retrieval_api/routes/) and no tool handler
(groundwork/tools/handlers.py) reads an attribute of the ports it is handed
(`platform.catalog`, `platform.blobs.get(...)`, ...); it passes them to
groundwork.services. The import-linter contract "Routes import no adapter"
keeps adapters out of the routes' imports; this keeps the ports out of their
bodies, where an import check cannot see them."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the names the transports give the ports bundle
PORT_NAMES = {"platform", "ports", "whole"}
HANDLER_FILES = [
    *sorted((ROOT / "retrieval_api" / "routes").glob("*.py")),
    ROOT / "groundwork" / "tools" / "handlers.py",
]


def port_uses(source: str) -> list[str]:
    """`line name.attribute` for each attribute read of a ports bundle, including
    `caller.platform.<attribute>` (retrieval_api.threads hands the ports over in a Caller)."""
    uses = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in PORT_NAMES:
            uses.append(f"{node.lineno} {node.value.id}.{node.attr}")
        elif isinstance(node.value, ast.Attribute) and node.value.attr == "platform":
            uses.append(f"{node.lineno} .platform.{node.attr}")
    return sorted(uses)


def test_no_route_or_tool_handler_uses_a_port_itself() -> None:
    assert all(path.exists() for path in HANDLER_FILES) and len(HANDLER_FILES) > 5
    offenders = [
        f"{path.relative_to(ROOT)}:{use}"
        for path in HANDLER_FILES
        for use in port_uses(path.read_text())
    ]
    assert offenders == []


def test_the_check_names_a_handler_that_reads_a_port() -> None:
    """The check can fail: a route reading the catalog itself, or the search
    engines through its caller, is named with its line."""
    route = (
        "def status(source_id, who, platform):\n"
        "    return platform.catalog.source_status(who.scope, source_id)\n"
        "def search(caller):\n"
        "    return caller.platform.search_engines('m')\n"
        "def mapped(platform, who):\n"
        "    return service.call(platform, who)\n"
    )
    assert port_uses(route) == ["2 platform.catalog", "4 .platform.search_engines"]
