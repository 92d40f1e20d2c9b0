"""GET /metrics: the operator's Prometheus view of the serving process —
latency by route template and status class, requests per tenant and outcome,
admission, the pipeline's backlog per tenant and stage, engine health — behind
the operator's own token, and off (saying so) without one."""

from __future__ import annotations

import dataclasses
import uuid

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from groundwork.stages.registration import register_file
from resources.composition.platform import Platform
from retrieval_api.app import create_app

TOKEN = "operator-token-" + uuid.uuid4().hex


def _samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [
        (s.name, s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def test_metrics_count_requests_backlog_and_engines(platform: Platform, tenant_id: str) -> None:
    operated = dataclasses.replace(
        platform, settings=dataclasses.replace(platform.settings, metrics_token=TOKEN)
    )
    register_file(  # registered, not extracted: one version of backlog
        platform.catalog,
        platform.blobs,
        tenant_id=tenant_id,
        origin=f"inbox://{tenant_id}/waiting.md",
        filename="waiting.md",
        data=b"# Waiting\n\nnot yet extracted\n",
        subjects=[f"tenant:{tenant_id}"],
        media_type="text/markdown",
    )
    _, key = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "reader")
    client = TestClient(create_app(lambda: operated), raise_server_exceptions=False)
    ok = client.post(
        "/v1/search", json={"query": "anything"}, headers={"Authorization": f"Bearer {key}"}
    )
    assert ok.status_code == 200
    assert client.post("/v1/search", json={"query": "x"}).status_code == 401
    assert client.get("/metrics").status_code == 401  # a tenant's view is not the operator's
    assert client.get("/metrics", headers={"Authorization": f"Bearer {key}"}).status_code == 401
    scraped = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert scraped.status_code == 200
    samples = _samples(scraped.text)

    def value(name: str, **labels: str) -> float:
        found = [v for n, ls, v in samples if n == name and labels.items() <= ls.items()]
        assert found, (name, labels)
        return sum(found)

    assert value("groundwork_http_request_seconds_count", route="/v1/search", status="2xx") == 1
    assert value("groundwork_http_request_seconds_count", route="/v1/search", status="4xx") == 1
    assert value("groundwork_tenant_requests_total", tenant=tenant_id, outcome="ok") == 1
    assert value("groundwork_tenant_requests_total", tenant="-", outcome="client_error") >= 1
    assert value("groundwork_pipeline_backlog_versions", tenant=tenant_id, stage="extract") == 1
    assert value("groundwork_pipeline_oldest_waiting_seconds", tenant=tenant_id) >= 0
    assert value("groundwork_engine_up", engine="postgresql") == 1
    assert value("groundwork_admission_waiting") == 0
    # labels are route templates: an id in a path never becomes a label of its own
    assert all("src_" not in ls.get("route", "") for _, ls, _ in samples)


def test_metrics_are_off_without_an_operator_token(platform: Platform) -> None:
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    response = client.get("/metrics")
    assert response.status_code == 404
    assert "GROUNDWORK_METRICS_TOKEN" in response.json()["alternative"]
