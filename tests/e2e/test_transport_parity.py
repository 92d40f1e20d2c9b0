"""One list of scenarios through both transports (issue 19): the plain HTTP
routes, and the tools through a real MCP client session (the SDK's client over
stdio, spawning `groundwork mcp`). Each scenario gives the same result, or the
same refusal code, on both."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import dagster as dg
import pytest
from fastapi.testclient import TestClient
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from resources.composition.platform import Platform
from resources.composition.settings import PROJECT_ROOT
from retrieval_api.app import create_app
from tests.conftest import TEST_DATABASE
from tests.e2e.helpers import resource, run_pipeline

HANDBOOK = (
    "# Travel handbook\n\nEmployees book trains for trips under 600 km.\n\n"
    "## Budget\n\n| Item | Limit |\n| --- | --- |\n| Hotel | 180 |\n| Meals | 60 |\n"
)
#: one provenance body for both transports (HTTP takes the tool schema's shape too)
PROVENANCE = {"tool": "parity", "run": "r1", "inputs": "", "derived_from": []}


@dataclass(frozen=True)
class World:
    tenant_id: str
    key: str
    reader_key: str
    handbook: str
    other_source: str
    artifact: str
    client: TestClient


@pytest.fixture(scope="module")
def world(platform: Platform, index_prefix: str) -> Iterator[World]:
    tenant_id = f"par-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant_id, tenant_id, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "agent")
    _, reader = platform.catalog.create_api_key(
        tenant_id, [f"tenant:{tenant_id}"], "reader", ["files:read"]
    )
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    headers = {"Authorization": f"Bearer {key}"}
    made = client.post(
        "/v1/sources", params={"filename": "travel.md"}, content=HANDBOOK.encode(), headers=headers
    )
    assert made.status_code == 201, made.text
    run_pipeline(
        dg.DagsterInstance.ephemeral(),
        tenant_id,
        platform.settings.default_model_key,
        resource(index_prefix),
    )
    artifact = client.post(
        "/v1/artifacts",
        json={"path": "p.md", "markdown": "# P\n\n## A\n\nalpha\n", "provenance": PROVENANCE},
        headers=headers,
    ).json()["artifact_id"]
    # a source of another tenant
    other = f"par-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(other, other, platform.settings.default_model_key)
    _, other_key = platform.catalog.create_api_key(other, [f"tenant:{other}"], "other")
    theirs = client.post(
        "/v1/sources",
        params={"filename": "secret.md"},
        content=b"# Secret\n\nnot yours\n",
        headers={"Authorization": f"Bearer {other_key}"},
    ).json()["source_id"]
    yield World(tenant_id, key, reader, made.json()["source_id"], theirs, artifact, client)


# A scenario: (name, key attribute, HTTP call -> outcome, tool name, tool args -> outcome).
# An outcome is ("ok", comparable value) or ("refused", code).
Outcome = tuple[str, Any]


def _http_outcome(response: Any, value: Callable[[dict[str, Any]], Any]) -> Outcome:
    body = response.json()
    if response.status_code >= 400:
        return ("refused", body.get("error"))
    return ("ok", value(body))


def _tool_outcome(result: Any, value: Callable[[dict[str, Any]], Any]) -> Outcome:
    if result.is_error:
        text = result.content[0].text
        import json

        start = text.find("{")
        payload = json.loads(text[start : text.rfind("}") + 1])
        return ("refused", payload["error"])
    return ("ok", value(result.structured_content))


def _scenarios(w: World) -> list[tuple[str, str, Callable[[], Outcome], str, dict[str, Any], Any]]:
    h = {"Authorization": f"Bearer {w.key}"}
    hr = {"Authorization": f"Bearer {w.reader_key}"}
    c = w.client
    revise = f"/v1/artifacts/{w.artifact}/revise"
    first_rows: Callable[[dict[str, Any]], Any] = lambda b: b["tables"][0]["untrusted_rows"]  # noqa: E731
    return [
        (
            "search",
            "key",
            lambda: _http_outcome(
                c.post("/v1/search", json={"query": "trains under 600 km"}, headers=h),
                lambda b: (b["outcome"], {x["source_id"] for x in b["hits"]}),
            ),
            "search_files",
            {"query": "trains under 600 km"},
            lambda b: (b["outcome"], {x["file_id"] for x in b["hits"]}),
        ),
        (
            "browse",
            "key",
            lambda: _http_outcome(
                c.post("/v1/search", json={"query": "*"}, headers=h),
                lambda b: (b["outcome"], {x["source_id"] for x in b["browse"]["sources"]}),
            ),
            "search_files",
            {"query": "*"},
            lambda b: (b["outcome"], {x["file_id"] for x in b["browse"]["files"]}),
        ),
        (
            "read window",
            "key",
            lambda: _http_outcome(
                c.get(f"/v1/sources/{w.handbook}/read", headers=h),
                lambda b: [x["untrusted_text"] for x in b["blocks"]][:3],
            ),
            "scan_document",
            {"file_id": w.handbook},
            lambda b: [x["untrusted_text"] for x in b["blocks"]][:3],
        ),
        (
            "tables",
            "key",
            lambda: _http_outcome(c.get(f"/v1/sources/{w.handbook}/tables", headers=h), first_rows),
            "extract_tables",
            {"file_id": w.handbook},
            first_rows,
        ),
        (
            "drill-down of an id never handed out",
            "key",
            lambda: _http_outcome(c.get("/v1/chunks/ch_" + "0" * 32, headers=h), lambda b: b),
            "get_chunks",
            {"chunk_ids": ["ch_" + "0" * 32]},
            # the tool answers per id; an id it did not hand out is the same refusal
            lambda b: None if b["chunks"] else "unknown_id",
        ),
        (
            "stale generation",
            "key",
            lambda: _http_outcome(
                c.post(
                    revise,
                    json={
                        "expected_generation": 99,
                        "edits": [{"op": "append", "text": "x"}],
                        "provenance": PROVENANCE,
                    },
                    headers=h,
                ),
                lambda b: b,
            ),
            "update_artifact",
            {
                "artifact_id": w.artifact,
                "expected_generation": 99,
                "edits": [{"op": "append", "text": "x"}],
                "provenance": PROVENANCE,
            },
            lambda b: b,
        ),
        (
            "destructive edit needs approval",
            "key",
            lambda: _http_outcome(
                c.post(
                    revise,
                    json={
                        "expected_generation": 1,
                        "edits": [{"op": "delete_section", "heading": "A"}],
                        "provenance": PROVENANCE,
                    },
                    headers=h,
                ),
                lambda b: b,
            ),
            "update_artifact",
            {
                "artifact_id": w.artifact,
                "expected_generation": 1,
                "edits": [{"op": "delete_section", "heading": "A"}],
                "provenance": PROVENANCE,
            },
            lambda b: b,
        ),
        (
            # the export is written once (groundwork.services.artifacts.export): the
            # same version and format is one record and one file whichever transport asks
            "export a version",
            "key",
            lambda: _http_outcome(
                c.post(
                    f"/v1/artifacts/{w.artifact}/exports",
                    json={"generation": 1, "format": "html"},
                    headers=h,
                ),
                lambda b: (b["state"], b["export_id"], b["file"]["file_id"], b["unrenderable"]),
            ),
            "export_artifact",
            {"artifact_id": w.artifact, "generation": 1, "format": "html"},
            lambda b: (b["state"], b["export_id"], b["artifact_file_id"], b["unrenderable"]),
        ),
        (
            "export a generation that does not exist",
            "key",
            lambda: _http_outcome(
                c.post(
                    f"/v1/artifacts/{w.artifact}/exports",
                    json={"generation": 7, "format": "pdf"},
                    headers=h,
                ),
                lambda b: b,
            ),
            "export_artifact",
            {"artifact_id": w.artifact, "generation": 7, "format": "pdf"},
            lambda b: b,
        ),
        (
            "another tenant's id",
            "key",
            lambda: _http_outcome(
                c.get(f"/v1/sources/{w.other_source}/read", headers=h), lambda b: b
            ),
            "scan_document",
            {"file_id": w.other_source},
            lambda b: b,
        ),
        (
            "missing scope",
            "reader_key",
            lambda: _http_outcome(
                c.post(
                    "/v1/artifacts",
                    json={"path": "r.md", "markdown": "# R\n", "provenance": PROVENANCE},
                    headers=hr,
                ),
                lambda b: b,
            ),
            "create_artifact",
            {"path": "r.md", "markdown": "# R\n", "provenance": PROVENANCE},
            lambda b: b,
        ),
    ]


def _mcp_calls(
    platform: Platform, index_prefix: str, api_key: str, calls: list[tuple[str, dict[str, Any]]]
) -> list[Any]:
    env = {
        **os.environ,
        "GROUNDWORK_HOME": str(platform.settings.home),
        "GROUNDWORK_OPENSEARCH_PORT": str(platform.settings.opensearch_http_port),
        "GROUNDWORK_OPENSEARCH_TRANSPORT_PORT": str(platform.settings.opensearch_transport_port),
        "GROUNDWORK_DATABASE_NAME": TEST_DATABASE,
        "GROUNDWORK_INDEX_PREFIX": index_prefix,
        "GROUNDWORK_API_KEY": api_key,
    }
    server = StdioServerParameters(
        command=str(Path(sys.executable).parent / "groundwork"),
        args=["mcp"],
        env=env,
        cwd=str(PROJECT_ROOT),
    )

    async def session() -> list[Any]:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(session)


def test_the_same_scenario_gives_the_same_outcome_over_http_and_mcp(
    platform: Platform, world: World, index_prefix: str
) -> None:
    scenarios = _scenarios(world)
    http = {name: call() for name, _, call, _, _, _ in scenarios}
    mcp: dict[str, Outcome] = {}
    for key_name in ("key", "reader_key"):
        mine = [s for s in scenarios if s[1] == key_name]
        results = _mcp_calls(
            platform, index_prefix, getattr(world, key_name), [(s[3], s[4]) for s in mine]
        )
        for (name, _, _, _, _, value), result in zip(mine, results, strict=True):
            outcome = _tool_outcome(result, value)
            if outcome == ("ok", "unknown_id"):
                outcome = ("refused", "unknown_id")
            mcp[name] = outcome
    assert http == mcp
    # and the scenarios exercised what they name
    assert http["search"][0] == "ok" and http["search"][1][1] == {world.handbook}
    assert http["stale generation"] == ("refused", "stale_generation")
    assert http["destructive edit needs approval"] == ("refused", "approval_required")
    assert http["another tenant's id"] == ("refused", "not_found")
    assert http["missing scope"] == ("refused", "forbidden")
    assert http["drill-down of an id never handed out"] == ("refused", "unknown_id")
    assert http["export a version"][0] == "ok" and http["export a version"][1][0] == "rendered"
    assert http["export a generation that does not exist"] == ("refused", "not_found")


def test_both_transports_store_one_provenance_shape(
    platform: Platform, world: World, index_prefix: str
) -> None:
    """The defect: HTTP stored the inputs object as given and the tool wrapped
    its text in {"inputs": ...}, with references in two encodings."""
    cited = {
        "tool": "parity",
        "run": "r2",
        "inputs": "summarise the travel policy",
        "derived_from": [{"ref_type": "source", "id": world.handbook, "version": "v"}],
    }
    h = {"Authorization": f"Bearer {world.key}"}
    over_http = world.client.post(
        "/v1/artifacts",
        json={"path": "cited.md", "markdown": "# C\n\ncited\n", "provenance": cited},
        headers=h,
    )
    assert over_http.status_code == 201, over_http.text
    (over_mcp,) = _mcp_calls(
        platform,
        index_prefix,
        world.key,
        [("create_artifact", {"path": "cited-tool.md", "markdown": "# C\n", "provenance": cited})],
    )
    assert not over_mcp.is_error, over_mcp.content
    stored = [
        world.client.get(f"/v1/artifacts/{artifact}/history", headers=h).json()[0]["provenance"]
        for artifact in (
            over_http.json()["artifact_id"],
            over_mcp.structured_content["artifact_id"],
        )
    ]
    assert stored[0] == stored[1]
    assert stored[0]["inputs"] == {"text": "summarise the travel policy"}
    assert stored[0]["derived_from"] == [{"source_id": world.handbook, "version_id": "v"}]
