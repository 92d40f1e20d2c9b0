"""The agent tools through a real MCP client session (the SDK's client over
stdio, spawning `groundwork mcp`) and over HTTP (/v1/tools), on a tenant whose
files went through the real pipeline."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import dagster as dg
import pytest
from fastapi.testclient import TestClient
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from groundwork.tools.registry import TOOLS
from resources.composition.platform import Platform
from resources.composition.settings import PROJECT_ROOT
from retrieval_api.app import create_app
from testbed import documents as make
from tests.conftest import TEST_DATABASE
from tests.e2e.helpers import resource, run_pipeline

# ~100 KiB of Markdown with multi-byte characters, so windows must not split them
LONG = "# Handbook\n\n" + "".join(
    f"## Part {n}\n\nSection {n}: naïve café rules — ünïcode ✓ line {n}. "
    + "Policy text. " * 40
    + "\n\n"
    for n in range(180)
)


@pytest.fixture(scope="module")
def tenant(platform: Platform, index_prefix: str) -> Iterator[dict[str, Any]]:
    tenant_id = f"tools-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant_id, tenant_id, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "agent")
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=True)
    headers = {"Authorization": f"Bearer {key}"}
    ids: dict[str, str] = {}
    for name, data in {
        "handbook.md": LONG.encode(),
        "review.pdf": make.report_pdf(),
        "review.docx": make.report_docx(),
        "table.csv": b"region,sales\nnorth,40\nsouth,25\n",
        "sign.png": make.png(make.text_image(["QUARTERLY SALES REVIEW"])),
    }.items():
        response = client.post(
            "/v1/sources", params={"filename": name}, content=data, headers=headers
        )
        assert response.status_code == 201, response.text
        ids[name] = response.json()["source_id"]
    run_pipeline(
        dg.DagsterInstance.ephemeral(),
        tenant_id,
        platform.settings.default_model_key,
        resource(index_prefix),
    )
    other = f"tools-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(other, other, platform.settings.default_model_key)
    _, other_key = platform.catalog.create_api_key(other, [f"tenant:{other}"], "other")
    yield {
        "id": tenant_id,
        "key": key,
        "ids": ids,
        "client": client,
        "headers": headers,
        "other_key": other_key,
    }


def _http(
    tenant: dict[str, Any], name: str, args: dict[str, Any], key: str | None = None
) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {key or tenant['key']}"}
    response = tenant["client"].post(f"/v1/tools/{name}", json=args, headers=headers)
    return response.status_code, response.json()


def test_schemas_suit_strict_decoders() -> None:
    def walk(schema: Any, path: str) -> None:
        if isinstance(schema, dict):
            assert "anyOf" not in schema and "oneOf" not in schema, path
            kind = schema.get("type")
            assert kind is not None and not isinstance(kind, list), (
                f"{path}: one type, never a union"
            )
            assert kind != "null", path
            if kind == "object":
                assert schema.get("additionalProperties") is False, path
                for name, sub in schema["properties"].items():
                    walk(sub, f"{path}.{name}")
            if kind == "array":
                walk(schema["items"], f"{path}[]")
            if "enum" in schema:
                assert all(isinstance(v, str) for v in schema["enum"]), path
            if kind == "string":
                assert "enum" in schema or "maxLength" in schema, f"{path}: inputs are bounded"
            if kind == "array":
                assert "maxItems" in schema, path

    assert len(TOOLS) == 17
    for spec in TOOLS.values():
        walk(spec.input_schema, spec.name)
        assert "tenant" not in str(spec.input_schema) and "subjects" not in str(spec.input_schema)


def test_paging_a_large_document_reassembles_it_exactly(tenant: dict[str, Any]) -> None:
    file_id = tenant["ids"]["handbook.md"]
    parts, offset, calls = [], 0, 0
    while True:
        status, window = _http(
            tenant, "read_file", {"file_id": file_id, "offset": offset, "max_bytes": 10**6}
        )
        assert status == 200 and window["clamped"] is True
        assert len(window["untrusted_content"].encode()) <= 32 * 1024
        parts.append(window["untrusted_content"])
        offset, calls = window["next_offset"], calls + 1
        if window["eof"]:
            break
    assert "".join(parts) == LONG and calls == -(-len(LONG.encode()) // (32 * 1024))


def test_another_tenants_ids_are_not_found(tenant: dict[str, Any]) -> None:
    for name in ("read_file", "scan_document", "get_file_processing_status", "extract_tables"):
        status, body = _http(
            tenant, name, {"file_id": tenant["ids"]["review.pdf"]}, key=tenant["other_key"]
        )
        assert status == 404 and body["error"] == "not_found" and body["alternative"]
    status, missing = _http(tenant, "read_file", {"file_id": "src_doesnotexist"})
    assert status == 404 and missing["message"].replace("src_doesnotexist", "") == body[
        "message"
    ].replace(tenant["ids"]["review.pdf"], "")


def test_refusals_name_their_alternative(tenant: dict[str, Any]) -> None:
    status, bad = _http(
        tenant, "read_file", {"file_id": tenant["ids"]["handbook.md"], "offset": 10**9}
    )
    assert status == 422 and "next_offset" in bad["alternative"]
    status, unknown = _http(tenant, "no_such_tool", {})
    assert status == 404 and "list_files" in unknown["alternative"]
    status, invalid = _http(tenant, "search_files", {"query": 5})
    assert status == 422 and invalid["alternative"]
    status, forged = _http(tenant, "read_file", {"file_id": "x", "tenant_id": "someone-else"})
    assert status == 422 and "additional" in forged["message"].lower()


def test_every_tool_over_http(tenant: dict[str, Any]) -> None:
    ids = tenant["ids"]
    status, listed = _http(tenant, "list_files", {"limit": 2})
    assert (
        status == 200
        and len(listed["files"]) == 2
        and listed["truncated"]
        and "cursor" in listed["how_to_continue"]
    )
    status, found = _http(tenant, "search_files", {"query": "quarterly review revenue"})
    assert status == 200 and found["outcome"] == "found" and found["hits"]
    chunk_ids = [h["chunk_id"] for h in found["hits"][:2]]
    status, scanned = _http(
        tenant, "scan_document", {"file_id": ids["handbook.md"], "max_blocks": 5}
    )
    assert status == 200 and len(scanned["blocks"]) == 5 and scanned["next_block"] == 5
    status, text = _http(tenant, "extract_text", {"file_id": ids["review.docx"]})
    assert status == 200 and text["untrusted_content"]
    status, tables = _http(tenant, "extract_tables", {"file_id": ids["review.docx"]})
    assert status == 200 and tables["tables"] and tables["tables"][0]["untrusted_rows"]
    status, image = _http(tenant, "analyze_image", {"file_id": ids["sign.png"]})
    assert (
        status == 200
        and "QUARTERLY" in " ".join(line["untrusted_text"] for line in image["ocr_lines"]).upper()
    )
    assert image["description_status"].startswith("unavailable") and "description" not in image
    status, summary = _http(tenant, "summarize_document", {"file_id": ids["review.pdf"]})
    assert (
        status == 200
        and summary["method"] == "extractive"
        and "UNTRUSTED" in summary["untrusted_summary"]
    )
    status, same = _http(
        tenant,
        "compare_documents",
        {"file_id_a": ids["review.pdf"], "file_id_b": ids["review.pdf"]},
    )
    assert status == 200 and same["identical"]
    status, diff = _http(
        tenant,
        "compare_documents",
        {"file_id_a": ids["review.pdf"], "file_id_b": ids["review.docx"]},
    )
    assert status == 200 and not diff["identical"]
    status, processing = _http(tenant, "get_file_processing_status", {"file_id": ids["review.pdf"]})
    assert (
        status == 200 and processing["processing_state"] == "extracted" and processing["searchable"]
    )
    status, summaries = _http(tenant, "get_summaries", {"query": "handbook policy"})
    assert status == 200 and summaries["summaries"]
    status, chunks = _http(
        tenant,
        "get_chunks",
        {"chunk_ids": chunk_ids + ["ch_" + "0" * 32], "turn_id": summaries["turn_id"]},
    )
    assert (
        status == 200 and len(chunks["chunks"]) == 2 and chunks["unknown_ids"] == ["ch_" + "0" * 32]
    )
    status, converted = _http(
        tenant, "convert_file", {"file_id": ids["table.csv"], "target": "xlsx"}
    )
    assert status == 200 and converted["media_type"].endswith("spreadsheetml.sheet")
    provenance = {
        "tool": "test-agent",
        "run": "turn-1",
        "inputs": "summarise the review",
        "derived_from": [
            {"ref_type": "source", "id": ids["review.pdf"], "version": processing["version_id"]}
        ],
    }
    status, made = _http(
        tenant,
        "create_artifact",
        {"path": "notes.md", "markdown": "# Notes\n\n## A\n\nOne.\n", "provenance": provenance},
    )
    assert status == 200 and made["generation"] == 1
    edit = {"op": "append", "text": "Two."}
    status, updated = _http(
        tenant,
        "update_artifact",
        {
            "artifact_id": made["artifact_id"],
            "expected_generation": 1,
            "edits": [edit],
            "provenance": provenance,
        },
    )
    assert status == 200 and updated["generation"] == 2
    status, stale = _http(
        tenant,
        "update_artifact",
        {
            "artifact_id": made["artifact_id"],
            "expected_generation": 1,
            "edits": [edit],
            "provenance": provenance,
        },
    )
    assert (
        status == 409 and stale["error"] == "stale_generation" and "reload" in stale["alternative"]
    )
    status, gated = _http(
        tenant,
        "update_artifact",
        {
            "artifact_id": made["artifact_id"],
            "expected_generation": 2,
            "edits": [{"op": "delete_section", "heading": "A"}],
            "provenance": provenance,
        },
    )
    assert (
        status == 409
        and gated["error"] == "approval_required"
        and gated["details"]["proposal_token"]
    )
    status, exported = _http(
        tenant,
        "export_artifact",
        {"artifact_id": made["artifact_id"], "generation": 2, "format": "docx"},
    )
    assert (
        status == 200
        and exported["state"] == "rendered"
        and exported["artifact_file_id"].startswith("afl_")
    )
    status, pdf = _http(
        tenant,
        "create_pdf",
        {"path": "brief.md", "markdown": "# Brief\n\nShort.\n", "provenance": provenance},
    )
    assert status == 200 and pdf["artifact_file_id"].startswith("afl_")
    assert "sha256/" not in str(pdf) + str(exported) + str(listed) and "/v1/files/" not in str(
        listed
    )


def test_the_drilldown_cap_holds_across_processes(
    platform: Platform, tenant: dict[str, Any]
) -> None:
    """The HTTP workers and the MCP server each have their own dispatcher; a
    turn's cap is one cap, not one per process (it was counted in memory)."""
    from groundwork.tools.dispatch import ToolDispatcher

    http_worker = ToolDispatcher(lambda: platform, drilldown_cap=2)
    mcp_server = ToolDispatcher(lambda: platform, drilldown_cap=2)
    who = platform.catalog.principal_for_key(tenant["key"])
    assert who is not None
    turn = http_worker.call(who, "search_files", {"query": "handbook policy"}).payload["turn_id"]
    chunk = {"chunk_ids": ["ch_" + "1" * 32], "turn_id": turn}
    assert http_worker.call(who, "get_chunks", chunk).payload["calls_left_this_turn"] == 1
    assert mcp_server.call(who, "get_chunks", chunk).payload["calls_left_this_turn"] == 0
    refused = http_worker.call(who, "get_chunks", chunk)
    assert not refused.ok and refused.payload["error"] == "limit"
    assert not mcp_server.call(who, "get_chunks", chunk).ok


def test_drilldown_is_capped_per_server_issued_turn(
    platform: Platform, tenant: dict[str, Any]
) -> None:
    """Issue 20's defect: a caller-chosen turn_id reset the cap. A turn is now
    issued by the server with the ids (search_files, get_summaries), bound to
    the key; an invented or another key's turn is refused; without a turn the
    calls count against the key's own bucket; HTTP /v1/chunks counts against
    the same cap."""
    from fastapi.testclient import TestClient

    from groundwork.tools.dispatch import ToolDispatcher
    from retrieval_api.app import create_app

    dispatcher = ToolDispatcher(lambda: platform, drilldown_cap=2)
    who = platform.catalog.principal_for_key(tenant["key"])
    assert who is not None
    found = dispatcher.call(who, "search_files", {"query": "handbook policy"})
    assert found.ok
    turn = found.payload["turn_id"]
    chunk = {"chunk_ids": ["ch_" + "1" * 32]}
    for left in (1, 0):
        result = dispatcher.call(who, "get_chunks", {**chunk, "turn_id": turn})
        assert result.ok and result.payload["calls_left_this_turn"] == left
    capped = dispatcher.call(who, "get_chunks", {**chunk, "turn_id": turn})
    assert not capped.ok and capped.payload["error"] == "limit"
    invented = dispatcher.call(who, "get_chunks", {**chunk, "turn_id": "turn-b"})
    assert not invented.ok and invented.payload["error"] == "invalid"
    _, other_key = platform.catalog.create_api_key(
        tenant["id"], [f"tenant:{tenant['id']}"], "other"
    )
    other = platform.catalog.principal_for_key(other_key)
    assert other is not None
    stolen = dispatcher.call(other, "get_chunks", {**chunk, "turn_id": turn})
    assert not stolen.ok and stolen.payload["error"] == "invalid"
    for left in (1, 0):  # no turn: the key's own bucket, not a reset
        result = dispatcher.call(who, "get_chunks", chunk)
        assert result.ok and result.payload["calls_left_this_turn"] == left
    assert not dispatcher.call(who, "get_chunks", chunk).ok
    fresh = dispatcher.call(who, "get_summaries", {"query": "handbook"}).payload["turn_id"]
    assert dispatcher.call(who, "get_chunks", {**chunk, "turn_id": fresh}).ok

    app = create_app(lambda: platform)
    app.state.tool_dispatcher = dispatcher  # the app's one ledger
    client = TestClient(app, raise_server_exceptions=False)
    headers = {"Authorization": f"Bearer {tenant['key']}"}
    searched = client.post("/v1/search", json={"query": "handbook policy"}, headers=headers)
    assert searched.status_code == 200
    http_turn = searched.json()["turn_id"]
    chunk_id = searched.json()["hits"][0]["chunk_id"]
    statuses = [
        client.get(
            f"/v1/chunks/{chunk_id}", params={"turn": http_turn}, headers=headers
        ).status_code
        for _ in range(3)
    ]
    assert statuses == [200, 200, 429]
    forged = client.get(f"/v1/chunks/{chunk_id}", params={"turn": "x.y"}, headers=headers)
    assert forged.status_code == 422 and forged.json()["error"] == "invalid"


def test_tools_over_a_real_mcp_stdio_session(
    platform: Platform, tenant: dict[str, Any], index_prefix: str
) -> None:
    env = {
        **os.environ,
        "GROUNDWORK_HOME": str(platform.settings.home),
        "GROUNDWORK_OPENSEARCH_PORT": str(platform.settings.opensearch_http_port),
        "GROUNDWORK_OPENSEARCH_TRANSPORT_PORT": str(platform.settings.opensearch_transport_port),
        "GROUNDWORK_DATABASE_NAME": TEST_DATABASE,
        "GROUNDWORK_INDEX_PREFIX": index_prefix,
        "GROUNDWORK_API_KEY": tenant["key"],
    }
    server = StdioServerParameters(
        command=str(Path(sys.executable).parent / "groundwork"),
        args=["mcp"],
        env=env,
        cwd=str(PROJECT_ROOT),
    )
    ids = tenant["ids"]

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            listed = await client.list_tools()
            out["tools"] = {t.name: t for t in listed.tools}
            out["files"] = await client.call_tool("list_files", {})
            pages, offset = [], 0
            while True:
                window = await client.call_tool(
                    "read_file", {"file_id": ids["handbook.md"], "offset": offset}
                )
                assert not window.is_error, window.content
                pages.append(window.structured_content["untrusted_content"])
                offset = window.structured_content["next_offset"]
                if window.structured_content["eof"]:
                    break
            out["text"] = "".join(pages)
            out["missing"] = await client.call_tool("scan_document", {"file_id": "src_" + "f" * 32})
            provenance = {"tool": "mcp-test", "run": "r1", "inputs": "", "derived_from": []}
            made = await client.call_tool(
                "create_artifact", {"path": "m.md", "markdown": "# M\n", "provenance": provenance}
            )
            artifact = made.structured_content["artifact_id"]
            edit = [{"op": "append", "text": "more"}]
            first = await client.call_tool(
                "update_artifact",
                {
                    "artifact_id": artifact,
                    "expected_generation": 1,
                    "edits": edit,
                    "provenance": provenance,
                },
            )
            out["first"] = first.structured_content
            out["stale"] = await client.call_tool(
                "update_artifact",
                {
                    "artifact_id": artifact,
                    "expected_generation": 1,
                    "edits": edit,
                    "provenance": provenance,
                },
            )
        return out

    out = anyio.run(session)
    assert set(out["tools"]) == set(TOOLS)
    assert out["tools"]["read_file"].input_schema == TOOLS["read_file"].input_schema
    assert out["tools"]["read_file"].output_schema == TOOLS["read_file"].output_schema
    assert out["tools"]["update_artifact"].annotations.destructive_hint is True
    listed = {f["file_id"] for f in out["files"].structured_content["files"]}
    assert set(ids.values()) <= listed  # files of another tenant never appear
    assert out["text"] == LONG
    assert out["missing"].is_error and "not_found" in out["missing"].content[0].text
    assert out["first"]["generation"] == 2
    assert out["stale"].is_error and "stale_generation" in out["stale"].content[0].text
    assert "reload" in out["stale"].content[0].text


def test_tools_over_streamable_http_with_a_bearer_key(
    platform: Platform, tenant: dict[str, Any], index_prefix: str
) -> None:
    import socket
    import subprocess
    import time

    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "GROUNDWORK_HOME": str(platform.settings.home),
        "GROUNDWORK_OPENSEARCH_PORT": str(platform.settings.opensearch_http_port),
        "GROUNDWORK_OPENSEARCH_TRANSPORT_PORT": str(platform.settings.opensearch_transport_port),
        "GROUNDWORK_DATABASE_NAME": TEST_DATABASE,
        "GROUNDWORK_INDEX_PREFIX": index_prefix,
    }
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "groundwork"), "mcp", "--http", "--port", str(port)],
        env=env,
        cwd=str(PROJECT_ROOT),
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.3)

        async def call(key: str) -> Any:
            headers = {"Authorization": f"Bearer {key}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as http,
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (
                    read,
                    write,
                ),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                return await client.call_tool(
                    "get_file_processing_status", {"file_id": tenant["ids"]["review.pdf"]}
                )

        mine = anyio.run(call, tenant["key"])
        assert not mine.is_error and mine.structured_content["processing_state"] == "extracted"
        theirs = anyio.run(call, tenant["other_key"])
        assert theirs.is_error and "not_found" in theirs.content[0].text
        nobody = anyio.run(call, "not-a-key")
        assert nobody.is_error and "unauthorized" in nobody.content[0].text
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_tool_needs_its_scope(platform: Platform, tenant: dict[str, Any]) -> None:
    _, reader = platform.catalog.create_api_key(
        tenant["id"], [f"tenant:{tenant['id']}"], "reader", scopes=["files:read"]
    )
    provenance = {"tool": "t", "run": "r", "inputs": "", "derived_from": []}
    status, refused = _http(
        tenant,
        "create_artifact",
        {"path": "x.md", "markdown": "# x", "provenance": provenance},
        key=reader,
    )
    assert (
        status == 403
        and refused["error"] == "forbidden"
        and "--scope artifacts:write" in refused["alternative"]
    )
    status, allowed = _http(tenant, "list_files", {}, key=reader)
    assert status == 200 and allowed["files"]
