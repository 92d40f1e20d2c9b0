"""A reranker the user runs, configured by URL: the platform's searches send
it their candidates, and when it is down they still answer, ranked locally,
and say so."""

from __future__ import annotations

import dataclasses
import uuid

from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found
from groundwork.stages.registration import register_file
from resources.composition.platform import Platform
from tests.e2e.helpers import publish_registered
from tests.rerank_endpoint import serving

DOCS = {
    "a.md": "# Storage\n\nThe storage service raises an error when the disk is full.\n",
    "b.md": "# Quotas\n\nERR-4021 means the volume reached its storage quota.\n",
    "c.md": "# Holidays\n\nThe office is closed on public holidays.\n",
}


def _tenant(platform: Platform) -> str:
    tenant = f"rr-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    for name, text in DOCS.items():
        register_file(
            platform.catalog,
            platform.blobs,
            tenant_id=tenant,
            origin=f"inbox://{tenant}/{name}",
            filename=name,
            data=text.encode(),
            subjects=[f"tenant:{tenant}"],
            media_type="text/markdown",
        )
    publish_registered(platform, tenant)
    return tenant


def _with_reranker(platform: Platform, url: str) -> Platform:
    settings = dataclasses.replace(platform.settings, rerank_url=url, rerank_timeout=0.5)
    return dataclasses.replace(platform, settings=settings)


def test_the_configured_reranker_is_asked_and_a_dead_one_degrades(platform: Platform) -> None:
    tenant = _tenant(platform)
    scope = AccessScope(tenant, (f"tenant:{tenant}",))
    request = SearchRequest("what does the storage quota error mean", limit=3)
    model = platform.settings.default_model_key
    with serving() as endpoint:
        remote = _with_reranker(platform, endpoint.url)
        found = hybrid_search(scope, request, remote.search_engines(model))
        assert isinstance(found, Found) and found.degraded == ()
        assert endpoint.received, "the configured reranker was never asked"
        sent = endpoint.received[0]["documents"]
        assert any("ERR-4021" in text for text in sent)
    down = _with_reranker(platform, endpoint.url)  # the server has stopped
    degraded = hybrid_search(scope, request, down.search_engines(model))
    assert isinstance(degraded, Found) and degraded.hits
    assert degraded.degraded and "ranked locally" in degraded.degraded[0]


def test_the_api_says_the_reranker_was_replaced(platform: Platform) -> None:
    from fastapi.testclient import TestClient

    from retrieval_api.app import create_app

    tenant = _tenant(platform)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "reader")
    with serving() as endpoint:
        url = endpoint.url
    down = _with_reranker(platform, url)  # nothing listens there any more
    client = TestClient(create_app(lambda: down), raise_server_exceptions=False)
    response = client.post(
        "/v1/search",
        json={"query": "what does the storage quota error mean", "limit": 3},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["outcome"] == "found" and body["hits"]
    assert len(body["degraded"]) == 1 and "ranked locally" in body["degraded"][0]
