"""/v1/connectors: admin scope required, secrets given as references and never
returned, the same rules as the CLI (one service)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from resources.composition.platform import Platform
from retrieval_api.app import create_app


@pytest.fixture
def api(platform: Platform) -> TestClient:
    return TestClient(create_app(lambda: platform), raise_server_exceptions=False)


def test_connectors_over_http(
    api: TestClient, platform: Platform, tenant_id: str, tmp_path
) -> None:
    _, admin = platform.catalog.create_api_key(
        tenant_id, [f"tenant:{tenant_id}"], "admin", scopes=["files:read", "sources:admin"]
    )
    _, reader = platform.catalog.create_api_key(
        tenant_id, [f"tenant:{tenant_id}"], "reader", scopes=["files:read"]
    )
    as_admin = {"Authorization": f"Bearer {admin}"}
    body = {
        "kind": "fsspec",
        "name": "wiki",
        "config": {"root": str(tmp_path)},
        "secrets": {"password": "env:GW_WIKI_PASSWORD"},
    }
    refused = api.post("/v1/connectors", json=body, headers={"Authorization": f"Bearer {reader}"})
    assert refused.status_code == 403
    created = api.post("/v1/connectors", json=body, headers=as_admin)
    assert created.status_code == 201, created.text
    shown = created.json()
    assert shown["secrets"] == ["password"] and "GW_WIKI_PASSWORD" not in created.text
    assert shown["behind"] is True and shown["last_pass"] == 0
    clear = dict(body, name="leaky", config={"root": "/x", "password": "hunter2"})
    leak = api.post("/v1/connectors", json=clear, headers=as_admin)
    assert leak.status_code == 422 and "secret" in leak.json()["message"]
    again = api.post("/v1/connectors", json=body, headers=as_admin)
    assert again.status_code == 409
    listed = api.get("/v1/connectors", headers=as_admin).json()["connectors"]
    assert [c["name"] for c in listed] == ["wiki"]
    paused = api.put("/v1/connectors/wiki/paused", json={"paused": True}, headers=as_admin)
    assert paused.status_code == 200 and paused.json()["paused"] is True
    removed = api.delete("/v1/connectors/wiki", headers=as_admin)
    assert removed.status_code == 200 and removed.json() == {"name": "wiki", "deleted_documents": 0}
    assert api.get("/v1/connectors/wiki", headers=as_admin).status_code == 404
