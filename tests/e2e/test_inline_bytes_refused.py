"""A metadata bag never carries a file inline (issue 35): a data: URI at any
depth of an artifact's provenance is refused where provenance is built
(groundwork.artifacts.provenance_from, below both transports), over HTTP and
over MCP alike, and nothing is saved."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from groundwork.artifacts import provenance_from
from groundwork.errors import Refused
from resources.composition.platform import Platform
from retrieval_api.app import create_app
from tests.e2e.test_transport_parity import _mcp_calls


@dataclass(frozen=True)
class Files:
    key: str
    client: TestClient


@pytest.fixture
def files(platform: Platform) -> Files:
    tenant_id = f"inl-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant_id, tenant_id, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "agent")
    return Files(key, TestClient(create_app(lambda: platform), raise_server_exceptions=False))


def test_provenance_refuses_inline_bytes_whichever_transport_built_it() -> None:
    with pytest.raises(Refused):
        provenance_from("t", "r", {"files": [{"bytes": "data:application/pdf;base64,JVBE"}]})
    with pytest.raises(Refused):
        provenance_from("t", "r", "data:text/plain;base64,aGk=")
    with pytest.raises(Refused):
        provenance_from("t", "r", "", [{"ref_type": "source", "id": "data:,x", "version": "v"}])
    assert provenance_from("t", "r", {"query": "travel policy"}).inputs == {
        "query": "travel policy"
    }


INLINE = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB"


def test_a_data_uri_in_provenance_is_refused_over_http_and_mcp(
    platform: Platform, files: Files, index_prefix: str
) -> None:
    headers = {"Authorization": f"Bearer {files.key}"}
    provenance = {"tool": "t", "run": "r", "inputs": {"figures": [{"png": INLINE}]}}
    refused = files.client.post(
        "/v1/artifacts",
        json={"path": "inline.md", "markdown": "# I\n\nx\n", "provenance": provenance},
        headers=headers,
    )
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"] == "invalid"
    assert "provenance.inputs.figures[0].png" in refused.json()["message"]
    (over_mcp,) = _mcp_calls(
        platform,
        index_prefix,
        files.key,
        [
            (
                "create_artifact",
                {
                    "path": "inline.md",
                    "markdown": "# I\n\nx\n",
                    "provenance": {"tool": "t", "run": "r", "inputs": INLINE, "derived_from": []},
                },
            )
        ],
    )
    assert over_mcp.is_error and '"invalid"' in over_mcp.content[0].text
    assert "data: URI" in over_mcp.content[0].text
    listed = files.client.get("/v1/artifacts", headers=headers).json()
    assert not [a for a in listed.get("artifacts", []) if a.get("path") == "inline.md"]
