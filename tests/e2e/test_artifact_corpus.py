"""One corpus, over HTTP against the real engines and pipeline: an artifact's
passages are found by search like any document's, and the citation says it is
an artifact and which one; the save reports the artifact's indexing state; the
listing marks it. (The `document_type` search filter is not built yet: see the
report of issue 35.)"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import dagster as dg
import pytest
from fastapi.testclient import TestClient

from resources.composition.platform import Platform
from retrieval_api.app import create_app
from tests.e2e.helpers import resource, run_pipeline

PROVENANCE = {"tool": "test-writer", "inputs": {"prompt": "write"}, "run": "run-1"}


@pytest.fixture(scope="module")
def corpus(platform: Platform, index_prefix: str) -> Iterator[dict[str, Any]]:
    tenant = f"c-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "corpus")
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    headers = {"Authorization": f"Bearer {key}"}
    made = client.post(
        "/v1/artifacts",
        json={
            "path": "reports/heron.md",
            "markdown": "# Heron survey\n\nThe grey herons nested beside the quarry lake "
            "in forty-two colonies this spring.\n",
            "provenance": PROVENANCE,
            "format": "pdf",
        },
        headers=headers,
    )
    assert made.status_code == 201, made.text
    upload = client.post(
        "/v1/sources",
        params={"filename": "otters.txt"},
        content=b"Otters returned to the river below the mill after ten years away.",
        headers=headers,
    )
    assert upload.status_code == 201, upload.text
    run_pipeline(
        dg.DagsterInstance.ephemeral(),
        tenant,
        platform.settings.default_model_key,
        resource(index_prefix),
    )
    yield {
        "client": client,
        "headers": headers,
        "artifact": made.json(),
        "upload": upload.json(),
    }


def _search(corpus: dict[str, Any], query: str) -> dict[str, Any]:
    answer = corpus["client"].post("/v1/search", json={"query": query}, headers=corpus["headers"])
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def test_the_save_reports_its_indexing_state(corpus: dict[str, Any]) -> None:
    assert corpus["artifact"]["indexing_state"] in {"pending", "extracting", "extracted"}
    now = corpus["client"].get(
        f"/v1/artifacts/{corpus['artifact']['artifact_id']}", headers=corpus["headers"]
    )
    assert now.json()["indexing_state"] == "extracted"  # after the pipeline ran


def test_an_artifact_is_searched_and_cited_as_an_artifact(corpus: dict[str, Any]) -> None:
    found = _search(corpus, "grey herons nested beside the quarry lake")
    assert found["outcome"] == "found", found
    top = found["hits"][0]
    artifact = corpus["artifact"]
    assert top["source_id"] == artifact["source_id"]
    assert top["citation"]["document_type"] == "artifact"
    assert top["citation"]["artifact_id"] == artifact["artifact_id"]
    other = _search(corpus, "otters returned to the river below the mill")
    first = other["hits"][0]
    assert first["source_id"] == corpus["upload"]["source_id"]
    assert first["citation"]["document_type"] == "source"
    assert first["citation"]["artifact_id"] is None
