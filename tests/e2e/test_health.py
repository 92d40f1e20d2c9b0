"""/v1/health names the engine that does not answer (503 degraded, Retry-After)
instead of failing opaquely, so the supervisor and clients can tell."""

from __future__ import annotations

import dataclasses

from fastapi.testclient import TestClient

from resources.composition.platform import Platform
from resources.opensearch.keyword_index import OpenSearchKeywordIndex, client_for
from retrieval_api.app import create_app


def test_health_is_ok_then_degraded_naming_the_engine(platform: Platform) -> None:
    ok = TestClient(create_app(lambda: platform)).get("/v1/health")
    assert ok.status_code == 200 and ok.json()["engines"] == {
        "postgresql": "ok",
        "keyword_index": "ok",
    }
    # the optional pieces are reported too: no replica configured here, and the
    # single embedded node (its indexes auto-expand replicas 0-1: green alone)
    assert ok.json()["status"] == "ok"
    assert ok.json()["replica"] == {"state": "not_configured"}
    assert ok.json()["keyword_cluster"] == {
        "status": "green",
        "nodes": 1,
        "data_nodes": 1,
        "unassigned_shards": 0,
    }
    unreachable = OpenSearchKeywordIndex(client_for("http://127.0.0.1:9"), "gw-health")
    broken = dataclasses.replace(platform, keywords=unreachable, _vectors={}, _embedders={})
    degraded = TestClient(create_app(lambda: broken), raise_server_exceptions=False).get(
        "/v1/health"
    )
    assert degraded.status_code == 503 and degraded.headers["retry-after"] == "5"
    body = degraded.json()
    assert body["error"] == "degraded" and body["engines"]["postgresql"] == "ok"
    assert body["engines"]["keyword_index"].startswith("unavailable")
    assert body["keyword_cluster"]["status"].startswith("unavailable")
