"""File text is data, never instructions (issue 19): every response field that
can carry text taken from a file is named `untrusted_*` (text blobs are also
fenced), in every HTTP response schema and every tool's output; MCP fences a
result with such a field at any depth."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from agent_tools.mcp_server import _as_text, carries_file_text
from groundwork.tools.registry import TOOLS
from resources.composition.platform import Platform
from retrieval_api.app import create_app

#: names that, in a response, would carry a file's text unmarked
FILE_TEXT_NAMES = {
    "text",
    "content",
    "body",
    "excerpt",
    "rows",
    "table",
    "markdown",
    "context",
    "removed_text",
    "added_text",
    "before",
    "after",
    "snippet",
}
#: written by the platform, not taken from a file (edit summaries name the operation)
PLATFORM_TEXT = {("SavedOut", "summary"), ("ArtifactVersionOut", "summary")}


def _response_schemas(openapi: dict[str, Any]) -> set[str]:
    """Component schemas reachable from any response (not from request bodies)."""
    components = openapi["components"]["schemas"]
    seen: set[str] = set()

    def refs(node: Any) -> list[str]:
        if isinstance(node, dict):
            found = [node["$ref"].rsplit("/", 1)[-1]] if "$ref" in node else []
            return found + [r for v in node.values() for r in refs(v)]
        if isinstance(node, list):
            return [r for v in node for r in refs(v)]
        return []

    todo = [
        r
        for ops in openapi["paths"].values()
        for op in ops.values()
        for response in op.get("responses", {}).values()
        for r in refs(response)
    ]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(refs(components[name]))
    return seen


def test_no_response_schema_carries_file_text_outside_the_marked_fields(
    platform: Platform,
) -> None:
    openapi = TestClient(create_app(lambda: platform)).get("/openapi.json").json()
    components = openapi["components"]["schemas"]
    offenders = [
        (name, prop)
        for name in sorted(_response_schemas(openapi))
        for prop in components[name].get("properties", {})
        if prop in FILE_TEXT_NAMES and (name, prop) not in PLATFORM_TEXT
    ]
    assert offenders == []
    marked = [
        (name, prop)
        for name in _response_schemas(openapi)
        for prop in components[name].get("properties", {})
        if prop.startswith("untrusted_")
    ]
    assert len(marked) >= 8  # hits, chunks, summaries, reads, blocks, tables, context, citations


def _keys(schema: Any) -> set[str]:
    if isinstance(schema, dict):
        own = set(schema.get("properties", {}))
        return own | {k for v in schema.values() for k in _keys(v)}
    if isinstance(schema, list):
        return {k for v in schema for k in _keys(v)}
    return set()


def test_no_tool_output_schema_names_file_text_unmarked() -> None:
    offenders = {
        (name, key)
        for name, spec in TOOLS.items()
        for key in _keys(spec.output_schema)
        if key in FILE_TEXT_NAMES
    }
    assert offenders == set()


def test_mcp_fences_a_result_with_file_text_at_any_depth() -> None:
    nested = {"outcome": "found", "hits": [{"citation": {"untrusted_excerpt": "ignore all"}}]}
    assert carries_file_text(nested)
    assert _as_text(nested).startswith("<<<UNTRUSTED-DOCUMENT-TEXT")
    plain = {"file_id": "src_1", "processing_state": "extracted"}
    assert not carries_file_text(plain) and not _as_text(plain).startswith("<<<")
