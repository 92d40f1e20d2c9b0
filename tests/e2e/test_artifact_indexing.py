"""An artifact is indexed as part of being saved, against the real engines
and no pipeline run: when the save returns, its passages are found by each
leg and cited as the artifact's (`indexing.state == "indexed"`); a revision's
new text likewise. A store that fails during the save's indexing (the keyword
index unreachable) never loses the save: it answers 201 with
`indexing.state == "failed"` and the reason, the artifact reads back whole,
and a retry (`POST /v1/artifacts/{id}/index`) or the ordinary pipeline run
finishes the indexing."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import dagster as dg
import pytest
from fastapi.testclient import TestClient

from groundwork.errors import StoreError
from groundwork.ports import IndexedChunk, KeywordIndex
from resources.composition.platform import Platform
from retrieval_api.app import create_app
from testbed.tenants import tenant_headers
from tests.e2e.helpers import resource, run_pipeline

PROVENANCE = {"tool": "test-writer", "inputs": {"prompt": "write"}, "run": "run-1"}


class UnreachableKeywords:
    """The keyword index as an engine that is down: every write fails the way
    the adapter reports a lost connection (reads still answer)."""

    def __init__(self, inner: KeywordIndex) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def upsert(self, chunks: Sequence[IndexedChunk]) -> int:
        raise StoreError("the keyword index is unreachable (connection refused)")


@pytest.fixture
def headers(platform: Platform) -> dict[str, str]:
    return tenant_headers(platform, "ix", "indexing")


@pytest.fixture
def client(platform: Platform) -> TestClient:
    return TestClient(create_app(lambda: platform), raise_server_exceptions=False)


def _create(client: TestClient, headers: dict[str, str], path: str, text: str) -> dict[str, Any]:
    made = client.post(
        "/v1/artifacts",
        json={"path": path, "markdown": text, "provenance": PROVENANCE, "format": "docx"},
        headers=headers,
    )
    assert made.status_code == 201, made.text
    return made.json()  # type: ignore[no-any-return]


def _hits(client: TestClient, headers: dict[str, str], query: str, mode: str) -> list[Any]:
    answer = client.post(
        "/v1/search", json={"query": query, "mode": mode, "rerank": False}, headers=headers
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["hits"]  # type: ignore[no-any-return]


def _cited(
    client: TestClient, headers: dict[str, str], query: str, artifact: dict[str, Any]
) -> None:
    """Each leg alone finds the artifact's passage, cited as that artifact."""
    for mode in ("vector", "keyword"):
        hits = _hits(client, headers, query, mode)
        assert hits, (mode, query)
        top = hits[0]
        assert top["source_id"] == artifact["source_id"], (mode, top)
        assert top["citation"]["document_type"] == "artifact"
        assert top["citation"]["artifact_id"] == artifact["artifact_id"]


def test_a_saved_artifact_is_searchable_and_cited_when_the_save_returns(
    client: TestClient, headers: dict[str, str]
) -> None:
    made = _create(
        client,
        headers,
        "reports/kestrel.md",
        "# Kestrel census\n\nKestrels hovered over the chalk downs above Lambourn all August.\n",
    )
    assert made["indexing"] == {"state": "indexed", "reason": None}
    _cited(client, headers, "kestrels hovering over the chalk downs", made)

    revised = client.post(
        f"/v1/artifacts/{made['artifact_id']}/revise",
        json={
            "expected_generation": 1,
            "edits": [{"op": "append", "text": "A merlin was ringed at Uffington in September."}],
            "provenance": PROVENANCE,
        },
        headers=headers,
    )
    assert revised.status_code == 200, revised.text
    assert revised.json()["indexing"] == {"state": "indexed", "reason": None}
    _cited(client, headers, "merlin ringed at Uffington", made)
    manifest = client.get(f"/v1/artifacts/{made['artifact_id']}", headers=headers).json()
    assert manifest["indexing"] == {"state": "indexed", "reason": None}


def test_an_index_failure_keeps_the_save_and_a_retry_finishes_it(
    platform: Platform, client: TestClient, headers: dict[str, str]
) -> None:
    broken = dataclasses.replace(platform, keywords=UnreachableKeywords(platform.keywords))
    down = TestClient(create_app(lambda: broken), raise_server_exceptions=False)
    text = "# Dormouse boxes\n\nHazel dormice used nine of the forty boxes in Bernwood.\n"
    made = _create(down, headers, "reports/dormouse.md", text)
    assert made["indexing"]["state"] == "failed"
    assert "unreachable" in made["indexing"]["reason"]
    # nothing lost: the artifact reads back whole, waiting for its indexing
    manifest = client.get(f"/v1/artifacts/{made['artifact_id']}", headers=headers)
    assert manifest.status_code == 200
    assert manifest.json()["untrusted_markdown"] == text
    assert manifest.json()["indexing"]["state"] == "pending"
    assert {f["role"] for f in manifest.json()["files"]} == {"primary", "preview"}
    assert _hits(client, headers, "hazel dormice in Bernwood boxes", "keyword") == []

    again = down.post(f"/v1/artifacts/{made['artifact_id']}/index", headers=headers)
    assert again.status_code == 200, again.text
    assert again.json()["state"] == "failed"  # still down: said again, still nothing lost
    retried = client.post(f"/v1/artifacts/{made['artifact_id']}/index", headers=headers)
    assert retried.status_code == 200, retried.text
    assert retried.json() == {"state": "indexed", "reason": None}
    _cited(client, headers, "hazel dormice in Bernwood boxes", made)


def test_the_pipeline_finishes_what_a_failed_save_left(
    platform: Platform, client: TestClient, headers: dict[str, str], index_prefix: str
) -> None:
    broken = dataclasses.replace(platform, keywords=UnreachableKeywords(platform.keywords))
    down = TestClient(create_app(lambda: broken), raise_server_exceptions=False)
    made = _create(
        down,
        headers,
        "reports/newt.md",
        "# Newt survey\n\nGreat crested newts bred in the Wytham ponds again this year.\n",
    )
    assert made["indexing"]["state"] == "failed"
    run_pipeline(
        dg.DagsterInstance.ephemeral(),
        _tenant_of(platform, made),
        platform.settings.default_model_key,
        resource(index_prefix),
    )
    manifest = client.get(f"/v1/artifacts/{made['artifact_id']}", headers=headers).json()
    assert manifest["indexing"] == {"state": "indexed", "reason": None}
    _cited(client, headers, "great crested newts in the Wytham ponds", made)


def test_another_tenants_key_cannot_retry(
    platform: Platform, client: TestClient, headers: dict[str, str]
) -> None:
    made = _create(client, headers, "reports/vole.md", "# Voles\n\nWater voles at Otmoor.\n")
    stranger = tenant_headers(platform, "ix", "stranger")
    answer = client.post(f"/v1/artifacts/{made['artifact_id']}/index", headers=stranger)
    assert answer.status_code == 404, answer.text


def _tenant_of(platform: Platform, made: dict[str, Any]) -> str:
    with platform.pool.connection() as conn:
        row = conn.execute(
            "SELECT tenant_id FROM artifacts WHERE artifact_id = %s", (made["artifact_id"],)
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_the_tools_answer_the_same_indexing(client: TestClient, headers: dict[str, str]) -> None:
    made = client.post(
        "/v1/tools/create_artifact",
        json={
            "path": "notes/owl.md",
            "markdown": "# Owls\n\nBarn owls hunted the water meadows at Port Meadow.\n",
            "provenance": {**PROVENANCE, "inputs": "write", "derived_from": []},
        },
        headers=headers,
    )
    assert made.status_code == 200, made.text
    assert made.json()["indexing"] == {"state": "indexed"}
    updated = client.post(
        "/v1/tools/update_artifact",
        json={
            "artifact_id": made.json()["artifact_id"],
            "expected_generation": 1,
            "edits": [{"op": "append", "text": "A tawny owl called from Wytham Woods."}],
            "provenance": {**PROVENANCE, "inputs": "append", "derived_from": []},
        },
        headers=headers,
    )
    assert updated.status_code == 200, updated.text
    assert updated.json()["indexing"] == {"state": "indexed"}
    hits = _hits(client, headers, "tawny owl calling from Wytham Woods", "keyword")
    assert hits and hits[0]["citation"]["artifact_id"] == made.json()["artifact_id"]
