"""The retrieval API over HTTP semantics (FastAPI TestClient), on the real engines."""

from __future__ import annotations

import uuid

import dagster as dg
import pytest
from fastapi.testclient import TestClient

from resources.composition.platform import Platform
from retrieval_api.app import create_app
from retrieval_api.schemas import ContextOut, SearchResponse
from tests.e2e.helpers import assert_pool_unwalled, resource, run_pipeline, write_inbox


@pytest.fixture(scope="module")
def client(platform: Platform) -> TestClient:
    return TestClient(create_app(lambda: platform), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def tenant_with_keys(platform: Platform, index_prefix: str) -> dict[str, str]:
    tenant = f"api-{uuid.uuid4().hex[:8]}"
    other = f"api-{uuid.uuid4().hex[:8]}"
    write_inbox(
        platform.settings.inbox_dir,
        tenant,
        {
            "guide.md": "# Guide\n\n## Vacation\n\nEmployees receive 25 vacation days per year.\n",
            "finance/.subjects": "group:finance\n",
            "finance/plan.md": "# Plan\n\nThe hiring budget for 2027 is 3.4M.\n",
        },
    )
    write_inbox(
        platform.settings.inbox_dir,
        other,
        {"other.md": "# Other\n\nEmployees receive 30 vacation days.\n"},
    )
    instance = dg.DagsterInstance.ephemeral()
    for t in (tenant, other):
        platform.catalog.ensure_tenant(t, t, platform.settings.default_model_key)
        run_pipeline(instance, t, platform.settings.default_model_key, resource(index_prefix))
    _, staff = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "staff")
    _, finance = platform.catalog.create_api_key(
        tenant, [f"tenant:{tenant}", "group:finance"], "finance"
    )
    _, other_key = platform.catalog.create_api_key(other, [f"tenant:{other}"], "other")
    return {"tenant": tenant, "staff": staff, "finance": finance, "other": other_key}


def _search(client: TestClient, key: str, query: str, **extra: object) -> dict:
    response = client.post(
        "/v1/search", json={"query": query, **extra}, headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_search_returns_hits_with_citations(
    client: TestClient, tenant_with_keys: dict[str, str]
) -> None:
    body = _search(client, tenant_with_keys["staff"], "how many vacation days")
    assert body["outcome"] == "found"
    top = body["hits"][0]
    assert "25 vacation days" in top["untrusted_text"]
    citation = top["citation"]
    assert citation["source_version_id"].startswith("ver_")
    assert citation["location_label"] == "line 5"
    assert citation["heading_path"] == ["Guide", "Vacation"]
    assert "blob" not in str(body) and "sha256/" not in str(body)


def test_keys_only_see_their_tenant_and_subjects(
    client: TestClient, tenant_with_keys: dict[str, str]
) -> None:
    other = _search(client, tenant_with_keys["other"], "vacation days")
    assert all("25 vacation" not in h["untrusted_text"] for h in other["hits"])
    staff = _search(client, tenant_with_keys["staff"], "hiring budget 2027", mode="keyword")
    assert all("3.4M" not in h["untrusted_text"] for h in staff["hits"])
    finance = _search(client, tenant_with_keys["finance"], "hiring budget 2027", mode="keyword")
    assert "3.4M" in finance["hits"][0]["untrusted_text"]


def test_metadata_filters_reach_the_legs(
    client: TestClient, tenant_with_keys: dict[str, str]
) -> None:
    found = _search(client, tenant_with_keys["finance"], "budget vacation")
    plan_source = next(h["source_id"] for h in found["hits"] if "3.4M" in h["untrusted_text"])
    filtered = _search(
        client, tenant_with_keys["finance"], "vacation days", filters={"source_ids": [plan_source]}
    )
    assert {h["source_id"] for h in filtered["hits"]} <= {plan_source}


def test_missing_and_bad_keys_are_json_401(client: TestClient) -> None:
    missing = client.post("/v1/search", json={"query": "x"})
    assert missing.status_code == 401 and missing.json()["error"] == "unauthorized"
    bad = client.post("/v1/search", json={"query": "x"}, headers={"X-API-Key": "gw_not_a_key"})
    assert bad.status_code == 401 and "not valid" in bad.json()["message"]


def test_invalid_requests_are_json_422_without_traces(
    client: TestClient, tenant_with_keys: dict[str, str]
) -> None:
    headers = {"Authorization": f"Bearer {tenant_with_keys['staff']}"}
    for body in (
        {"query": "x" * 2001},
        {"query": "x", "limit": 1000},
        {"query": "x", "mode": "magic"},
        {"query": ["not", "a", "string"]},
    ):
        response = client.post("/v1/search", json=body, headers=headers)
        assert response.status_code == 422
        payload = response.json()
        assert payload["error"] == "invalid_request" and payload["message"]
        assert "Traceback" not in response.text


def test_upload_registers_a_version_the_pipeline_then_publishes(
    client: TestClient, platform: Platform, tenant_with_keys: dict[str, str], index_prefix: str
) -> None:
    headers = {"Authorization": f"Bearer {tenant_with_keys['staff']}"}
    content = b"# Parking\n\nVisitors park on level P2 after registering at reception.\n"
    response = client.post(
        "/v1/sources", params={"filename": "parking.md"}, content=content, headers=headers
    )
    assert response.status_code == 201, response.text
    registered = response.json()
    assert registered["created"] and registered["media_type"] == "text/markdown"
    status = client.get(f"/v1/sources/{registered['source_id']}/status", headers=headers).json()
    assert status["processing_state"] == "pending" and status["published"] is False
    again = client.post(
        "/v1/sources", params={"filename": "parking.md"}, content=content, headers=headers
    )
    assert again.json()["created"] is False
    run_pipeline(
        dg.DagsterInstance.ephemeral(),
        tenant_with_keys["tenant"],
        platform.settings.default_model_key,
        resource(index_prefix),
    )
    status = client.get(f"/v1/sources/{registered['source_id']}/status", headers=headers).json()
    assert status["processing_state"] == "extracted" and status["published"] is True
    assert (
        "P2"
        in _search(client, tenant_with_keys["staff"], "where do visitors park")["hits"][0][
            "untrusted_text"
        ]
    )


def test_another_tenants_source_status_is_not_found(
    client: TestClient, tenant_with_keys: dict[str, str]
) -> None:
    headers = {"Authorization": f"Bearer {tenant_with_keys['staff']}"}
    created = client.post(
        "/v1/sources", params={"filename": "x.md"}, content=b"# X\n\ntext\n", headers=headers
    ).json()
    other = client.get(
        f"/v1/sources/{created['source_id']}/status",
        headers={"Authorization": f"Bearer {tenant_with_keys['other']}"},
    )
    missing = client.get("/v1/sources/src_does_not_exist/status", headers=headers)
    assert other.status_code == missing.status_code == 404
    assert other.json()["error"] == missing.json()["error"] == "not_found"


def test_upload_refuses_subjects_the_caller_lacks(
    client: TestClient, tenant_with_keys: dict[str, str]
) -> None:
    response = client.post(
        "/v1/sources",
        params={"filename": "y.md", "subjects": ["group:board"]},
        content=b"# Y\n",
        headers={"Authorization": f"Bearer {tenant_with_keys['staff']}"},
    )
    assert response.status_code == 422 and "subjects" in response.json()["message"]


def test_openapi_is_served(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert "/v1/search" in spec["paths"] and "/v1/sources" in spec["paths"]
    for path, model in (("/v1/search", "SearchResponse"), ("/v1/context", "ContextOut")):
        ok = spec["paths"][path]["post"]["responses"]["200"]["content"]["application/json"]
        assert ok["schema"]["$ref"].endswith(f"/{model}")


def test_search_and_context_answer_exactly_their_documented_models(
    client: TestClient, tenant_with_keys: dict[str, str]
) -> None:
    """The handlers serialize their response model once, themselves (FastAPI's
    second validation of the return value cost ~0.5 ms per search): what goes
    out must still be exactly the documented model, nothing more."""
    headers = {"Authorization": f"Bearer {tenant_with_keys['staff']}"}
    for path, model in (("/v1/search", SearchResponse), ("/v1/context", ContextOut)):
        response = client.post(path, json={"query": "vacation days"}, headers=headers)
        assert (
            response.status_code == 200 and response.headers["content-type"] == "application/json"
        )
        body = response.json()
        assert body["outcome"] == "found"
        assert model.model_validate(body).model_dump(mode="json") == body


def test_a_search_reads_its_tenant_with_its_key(
    client: TestClient,
    tenant_with_keys: dict[str, str],
    platform: Platform,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tenant's serving settings come in the key's own read (four round
    trips fewer than a walled read of their own), and as they are at this
    request: constants set between two searches shape the second."""
    from groundwork.catalog import TenantDirectory
    from groundwork.retrieval.kernel import FusionConstants, RetrievalPolicy
    from resources.postgres.catalog import PostgresCatalog

    tenant = tenant_with_keys["tenant"]
    reads: list[str] = []
    read = PostgresCatalog.get_tenant

    def counted(self: TenantDirectory, tenant_id: str):  # type: ignore[no-untyped-def]
        reads.append(tenant_id)
        return read(self, tenant_id)  # type: ignore[arg-type]

    monkeypatch.setattr(PostgresCatalog, "get_tenant", counted)

    def top(path: str = "/v1/search") -> dict:
        response = client.post(
            path,
            json={"query": "how many vacation days", "mode": "hybrid"},
            headers={"Authorization": f"Bearer {tenant_with_keys['staff']}"},
        )
        assert response.status_code == 200, response.text
        body = response.json()
        return body["hits"][0] if path == "/v1/search" else body["items"][0]

    def expected(hit: dict, k: int, keyword_weight: float) -> float:
        weights = {"vector": 1.0, "keyword": keyword_weight}
        return sum(weights[leg] / (k + rank) for leg, rank in hit["leg_ranks"].items())

    defaults = RetrievalPolicy()
    hit = top()
    assert hit["score"] == pytest.approx(
        expected(hit, defaults.rrf_k, dict(defaults.leg_weights)["keyword"])
    )
    serving = read(platform.catalog, tenant).active_model  # type: ignore[arg-type,union-attr]
    tuned = FusionConstants(2, 1.5, depth=50, model_key=serving)
    assert platform.catalog.set_fusion(tenant, tuned)
    try:
        hit = top()
        assert hit["score"] == pytest.approx(expected(hit, 2, 1.5))
        assert top("/v1/context")["citation_id"]
    finally:
        platform.catalog.set_fusion(tenant, None)
    assert reads == [], "the search read its tenant apart from its key"


def test_a_search_checks_out_once_for_its_key_and_once_for_its_work(
    client: TestClient, tenant_with_keys: dict[str, str], platform: Platform
) -> None:
    """After the key's lookup, the vector leg, the re-check and the citations
    share one checkout behind one wall (`shared_transaction`): they took one
    each, a BEGIN, a wall and a COMMIT apiece. The citations still land, and
    the pool's connections are unwalled after."""
    pool = platform.pool
    _search(client, tenant_with_keys["staff"], "how many vacation days")  # warm: tenant views
    pool.pop_stats()  # type: ignore[attr-defined]
    body = _search(client, tenant_with_keys["staff"], "how many vacation days", mode="hybrid")
    checkouts = pool.pop_stats().get("requests_num", 0)  # type: ignore[attr-defined]
    assert body["outcome"] == "found" and checkouts == 2
    cited = body["hits"][0]["citation_id"]
    assert platform.catalog.citation(tenant_with_keys["tenant"], cited) is not None
    assert_pool_unwalled(pool)
