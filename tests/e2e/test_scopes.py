"""Scopes on every route and tool, from one table (issue 19): walk the OpenAPI
document and the tool registry with keys that lack exactly the needed scope,
and expect a refusal before anything happens."""

from __future__ import annotations

import re
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient

from groundwork.services.scopes import ALL_SCOPES, OPERATION_SCOPES
from groundwork.tools.registry import TOOLS
from resources.composition.platform import Platform
from retrieval_api.app import ROUTERS, create_app
from retrieval_api.scopes import ROUTE_OPERATIONS, TOOL_CALL, authorizes_in_its_thread

#: a valid body for each route that authorizes in its handler's thread (its body
#: is validated first, like the request hygiene's checks: without a valid body it
#: answers 422 and nothing runs); a route marked so without an entry fails below
VALID_BODIES: dict[tuple[str, str], dict[str, object]] = {
    ("POST", "/v1/search"): {"query": "vacation days"},
    ("POST", "/v1/context"): {"query": "vacation days"},
}


@pytest.fixture
def client(platform: Platform) -> TestClient:
    return TestClient(create_app(lambda: platform), raise_server_exceptions=False)


def _api_routes(client: TestClient) -> list[tuple[str, str]]:
    """Every operation in the OpenAPI document, and the app's own routes hidden
    from it (the operator's /metrics): each needs its row in the table."""
    from fastapi.routing import APIRoute

    paths = client.get("/openapi.json").json()["paths"]
    documented = {(method.upper(), path) for path, ops in paths.items() for method in ops}
    hidden = {
        (method, route.path)
        for route in cast(Any, client.app).routes
        if isinstance(route, APIRoute) and not route.include_in_schema
        for method in route.methods
    }
    return sorted(documented | hidden)


def test_every_route_is_assigned_an_operation_and_every_operation_a_scope(
    client: TestClient,
) -> None:
    routes = _api_routes(client)
    assert set(routes) == set(ROUTE_OPERATIONS), "routes and retrieval_api/scopes.py disagree"
    for operation in ROUTE_OPERATIONS.values():
        assert operation in (None, TOOL_CALL) or operation in OPERATION_SCOPES
    assert {spec.scope for spec in TOOLS.values()} <= set(ALL_SCOPES)


def test_every_route_refuses_a_key_without_its_scope(
    client: TestClient, platform: Platform, tenant_id: str
) -> None:
    walked = 0
    for method, path in _api_routes(client):
        operation = ROUTE_OPERATIONS[(method, path)]
        if operation in (None, TOOL_CALL):
            continue  # public, or the tool's own scope (walked below)
        needed = OPERATION_SCOPES[operation].value
        _, key = platform.catalog.create_api_key(
            tenant_id, [f"tenant:{tenant_id}"], "walk", [s for s in ALL_SCOPES if s != needed]
        )
        url = re.sub(r"\{[^}]+\}", "src_0", path)
        body = VALID_BODIES.get((method, path), {})
        response = client.request(
            method, url, json=body, headers={"Authorization": f"Bearer {key}"}
        )
        assert response.status_code == 403, (method, path, response.status_code, response.text)
        body = response.json()
        assert body["error"] == "forbidden" and needed in body["message"], body
        assert body["alternative"]
        walked += 1
    assert walked >= 35


def test_a_route_authorizing_in_its_thread_refuses_before_its_work(
    client: TestClient, platform: Platform, tenant_id: str
) -> None:
    """Such a route hops to a worker thread once, authorizes there, then works:
    with no key, a revoked key or one without the scope, it answers 401/403
    and its work never starts."""
    marked = {
        (method, route.path)
        for router in ROUTERS
        for route in router.routes
        for method in getattr(route, "methods", ())
        if authorizes_in_its_thread(route)
    }
    assert marked == set(VALID_BODIES), "each such route needs a valid body here"
    key_id, revoked = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "gone")
    platform.catalog.revoke_api_key(tenant_id, key_id)
    for (method, path), body in VALID_BODIES.items():
        operation = ROUTE_OPERATIONS[(method, path)]
        assert operation is not None and operation != TOOL_CALL
        needed = OPERATION_SCOPES[operation].value
        _, lacking = platform.catalog.create_api_key(
            tenant_id, [f"tenant:{tenant_id}"], "walk", [s for s in ALL_SCOPES if s != needed]
        )
        for headers, status in (
            ({}, 401),
            ({"Authorization": f"Bearer {revoked}"}, 401),
            ({"Authorization": f"Bearer {lacking}"}, 403),
        ):
            response = client.request(method, path, json=body, headers=headers)
            assert response.status_code == status, (path, headers, response.text)
        assert client.request(method, path, json={"mode": "sideways"}).status_code == 422


def test_every_tool_refuses_a_key_without_its_scope(
    client: TestClient, platform: Platform, tenant_id: str
) -> None:
    for name, spec in TOOLS.items():
        _, key = platform.catalog.create_api_key(
            tenant_id,
            [f"tenant:{tenant_id}"],
            "walk",
            [s for s in ALL_SCOPES if s != spec.scope],
        )
        response = client.post(
            f"/v1/tools/{name}", json={}, headers={"Authorization": f"Bearer {key}"}
        )
        assert response.status_code == 403, (name, response.text)
        assert response.json()["error"] == "forbidden"
    # a key holding only the tool's own scope may call it over HTTP
    _, writer = platform.catalog.create_api_key(
        tenant_id, [f"tenant:{tenant_id}"], "artifacts-only", ["artifacts:write"]
    )
    made = client.post(
        "/v1/tools/create_artifact",
        json={
            "path": "only.md",
            "markdown": "# Only\n",
            "provenance": {"tool": "t", "run": "r", "inputs": "", "derived_from": []},
        },
        headers={"Authorization": f"Bearer {writer}"},
    )
    assert made.status_code == 200, made.text


def test_a_read_key_cannot_register_delete_rescope_or_revise(
    client: TestClient, platform: Platform, tenant_id: str
) -> None:
    """The defect: scopes were checked only by the tool dispatcher, so a
    files:read key could write, delete and re-scope over HTTP."""
    _, reader = platform.catalog.create_api_key(
        tenant_id, [f"tenant:{tenant_id}"], "reader", ["files:read"]
    )
    headers = {"Authorization": f"Bearer {reader}"}
    attempts = [
        client.post("/v1/sources?filename=a.md", content=b"# A\n\ntext\n", headers=headers),
        client.delete("/v1/sources/src_x", headers=headers),
        client.put("/v1/sources/src_x/subjects", json={"subjects": ["*"]}, headers=headers),
        client.post(
            "/v1/artifacts/art_x/revise",
            json={"expected_generation": 1, "markdown": "x"},
            headers=headers,
        ),
    ]
    assert [r.status_code for r in attempts] == [403, 403, 403, 403]
    # and a full key (without sources:admin) still cannot widen who may read a source
    _, writer = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "writer")
    made = client.post(
        "/v1/sources?filename=b.md",
        content=b"# B\n\ntext\n",
        headers={"Authorization": f"Bearer {writer}"},
    )
    assert made.status_code == 201, made.text
    widened = client.put(
        f"/v1/sources/{made.json()['source_id']}/subjects",
        json={"subjects": ["group:everyone"]},
        headers={"Authorization": f"Bearer {writer}"},
    )
    assert widened.status_code == 403


def test_a_route_authorizing_in_its_thread_hops_to_a_worker_once(
    client: TestClient, platform: Platform, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route-scope dependency leaves it alone (that hop is the one saved),
    and its key is looked up once."""
    import retrieval_api.scopes
    from resources.postgres.catalog import PostgresCatalog

    hops: list[str] = []
    lookups: list[str] = []
    hop = retrieval_api.scopes.run_in_threadpool
    authenticate = PostgresCatalog.authenticate

    async def counted_hop(function, *args, **kwargs):  # type: ignore[no-untyped-def]
        hops.append(function.__name__)
        return await hop(function, *args, **kwargs)

    def counted_lookup(self: PostgresCatalog, secret: str):  # type: ignore[no-untyped-def]
        lookups.append(secret)
        return authenticate(self, secret)

    monkeypatch.setattr(retrieval_api.scopes, "run_in_threadpool", counted_hop)
    monkeypatch.setattr(PostgresCatalog, "authenticate", counted_lookup)
    _, key = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "once")
    headers = {"Authorization": f"Bearer {key}"}
    for (method, path), body in VALID_BODIES.items():
        hops.clear()
        lookups.clear()
        response = client.request(method, path, json=body, headers=headers)
        assert response.status_code == 200, response.text
        assert (hops, lookups) == ([], [key]), path
    # any other route with a key: the dependency's hop, one lookup
    hops.clear()
    lookups.clear()
    assert client.get("/v1/files", headers=headers).status_code == 200
    assert (hops, lookups) == (["authorize"], [key])
