"""The core speaks the OpenTelemetry API only (issue #33): no SDK, exporter or
instrumentation is imported under groundwork/; those are wired at the edge
(resources/composition/tracing.py, retrieval_api). import-linter cannot forbid
a subpackage of an external package, so this reads the imports itself."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "groundwork"
#: what the API distribution provides (opentelemetry-api)
API_MODULES = ("opentelemetry.trace", "opentelemetry.context", "opentelemetry.util")


def _imported(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.extend(
                [node.module]
                if node.module != "opentelemetry"
                else [f"opentelemetry.{alias.name}" for alias in node.names]
            )
    return names


def test_the_core_imports_only_the_opentelemetry_api() -> None:
    found = {
        (str(path.relative_to(CORE)), name)
        for path in CORE.rglob("*.py")
        for name in _imported(path)
        if name == "opentelemetry" or name.startswith("opentelemetry.")
    }
    assert found, "groundwork/tracing.py uses the API: this test would see it"
    outside = {(p, n) for p, n in found if not n.startswith(API_MODULES)}
    assert outside == set()
