"""Layered answers over HTTP: context, summaries, verbatim drill-down, citation
verification, browse mode."""

from __future__ import annotations

import uuid

import dagster as dg
import pytest
from fastapi.testclient import TestClient

from resources.composition.platform import Platform
from retrieval_api.app import create_app
from tests.e2e.helpers import resource, run_pipeline, write_inbox

GUIDE = """# Guide

## Vacation

Employees receive 25 vacation days per year.

Unused days carry over until March.

## Parking

Visitors park on level P2 after registering at reception.
"""


@pytest.fixture(scope="module")
def setup(platform: Platform, index_prefix: str) -> dict[str, str]:
    tenant = f"l-{uuid.uuid4().hex[:8]}"
    write_inbox(
        platform.settings.inbox_dir,
        tenant,
        {
            "guide.md": GUIDE,
            "notes.txt": "The build system is called Forge.\n\nRun forge test before merging.\n",
            "finance/.subjects": "group:finance\n",
            "finance/plan.md": "# Plan\n\nThe hiring budget for 2027 is 3.4M.\n",
        },
    )
    run_pipeline(
        dg.DagsterInstance.ephemeral(),
        tenant,
        platform.settings.default_model_key,
        resource(index_prefix),
    )
    _, staff = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "staff")
    _, finance = platform.catalog.create_api_key(
        tenant, [f"tenant:{tenant}", "group:finance"], "finance"
    )
    return {"tenant": tenant, "staff": staff, "finance": finance}


@pytest.fixture(scope="module")
def client(platform: Platform) -> TestClient:
    return TestClient(create_app(lambda: platform), raise_server_exceptions=False)


def _h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_context_is_budgeted_fenced_and_citation_ready(
    client: TestClient, setup: dict[str, str]
) -> None:
    body = client.post(
        "/v1/context",
        json={"query": "vacation days", "budget_tokens": 300},
        headers=_h(setup["staff"]),
    ).json()
    assert body["outcome"] == "found" and body["used_tokens"] <= 300
    first = body["items"][0]
    assert first["marker"] == 1 and first["citation_id"].startswith("cit_")
    assert len(first["chunk_ids"]) >= 1 and first["tokens"] > 0
    assert (
        body["untrusted_context"].startswith("[1] Guide")
        and "<<<UNTRUSTED-DOCUMENT-TEXT" in body["untrusted_context"]
    )
    assert (
        "25 vacation days" in body["untrusted_context"]
        and "Unused days carry over" in body["untrusted_context"]
    )


def test_summaries_first_then_verbatim_drill_down(
    client: TestClient, setup: dict[str, str]
) -> None:
    layer = client.get(
        "/v1/summaries", params={"query": "where do visitors park"}, headers=_h(setup["staff"])
    ).json()
    assert layer["overview"].startswith("2 sources")  # the finance plan is not visible to staff
    top = layer["summaries"][0]
    assert top["kind"] == "extractive" and 1 <= len(top["pointers"]) <= 5
    chunk = client.get(f"/v1/chunks/{top['pointers'][0]}", headers=_h(setup["staff"]))
    assert chunk.status_code == 200 and chunk.json()["untrusted_content"].startswith(
        "<<<UNTRUSTED-DOCUMENT-TEXT"
    )


def test_drill_down_refuses_ids_it_did_not_hand_out_and_names_the_valid_ones(
    client: TestClient, setup: dict[str, str]
) -> None:
    client.post("/v1/search", json={"query": "Forge"}, headers=_h(setup["staff"]))
    malformed = client.get("/v1/chunks/not-an-id", headers=_h(setup["staff"]))
    assert malformed.status_code == 404 and malformed.json()["error"] == "unknown_id"
    assert malformed.json()["valid_ids"]
    unseen = client.get(f"/v1/chunks/ch_{'0' * 32}", headers=_h(setup["staff"]))
    assert unseen.status_code == 404 and "previous response" in unseen.json()["message"]
    assert set(unseen.json()["valid_ids"]) == set(malformed.json()["valid_ids"])


def test_citations_resolve_and_verify_with_withheld_counted(
    client: TestClient, setup: dict[str, str]
) -> None:
    finance = client.post(
        "/v1/search", json={"query": "hiring budget 2027"}, headers=_h(setup["finance"])
    ).json()
    plan = next(h for h in finance["hits"] if "3.4M" in h["untrusted_text"])
    vacation = client.post(
        "/v1/search", json={"query": "vacation days"}, headers=_h(setup["finance"])
    ).json()
    guide = next(h for h in vacation["hits"] if h["filename"] == "guide.md")
    own = client.get(f"/v1/citations/{plan['citation_id']}", headers=_h(setup["finance"])).json()
    assert own["status"] == "exists" and own["citation"]["untrusted_excerpt"].startswith(
        "The hiring budget"
    )
    # staff lost (never had) access to the plan: withheld, and counted as such
    resolved = client.post(
        "/v1/citations/resolve",
        json={"citation_ids": [plan["citation_id"], guide["citation_id"], "cit_bogus"]},
        headers=_h(setup["staff"]),
    ).json()
    by_id = {c["citation_id"]: c for c in resolved["citations"]}
    assert (
        by_id[plan["citation_id"]]["status"] == "withheld"
        and by_id[plan["citation_id"]]["citation"] is None
    )
    assert by_id[guide["citation_id"]]["status"] == "exists"
    assert resolved["withheld"] == 1 and resolved["unknown"] == ["cit_bogus"]


def test_a_citation_drifts_when_its_text_changes(
    client: TestClient, setup: dict[str, str], platform: Platform, index_prefix: str
) -> None:
    hit = client.post(
        "/v1/search", json={"query": "Forge build system"}, headers=_h(setup["staff"])
    ).json()["hits"][0]
    write_inbox(
        platform.settings.inbox_dir,
        setup["tenant"],
        {"notes.txt": "The build system is called Anvil now.\n\nRun forge test before merging.\n"},
    )
    run_pipeline(
        dg.DagsterInstance.ephemeral(),
        setup["tenant"],
        platform.settings.default_model_key,
        resource(index_prefix),
    )
    checked = client.get(f"/v1/citations/{hit['citation_id']}", headers=_h(setup["staff"])).json()
    assert checked["status"] == "drifted"
    assert "Forge" in checked["citation"]["untrusted_excerpt"]  # the snapshot is what was cited


def test_browse_lists_what_exists_by_type_with_paging(
    client: TestClient, setup: dict[str, str]
) -> None:
    first = client.post(
        "/v1/search", json={"query": "*", "limit": 1}, headers=_h(setup["finance"])
    ).json()
    assert first["outcome"] == "browse"
    assert first["browse"]["counts_by_type"] == {"text/markdown": 2, "text/plain": 1}
    assert len(first["browse"]["sources"]) == 1 and first["browse"]["next_cursor"]
    rest = client.post(
        "/v1/search",
        json={"query": "", "limit": 10, "cursor": first["browse"]["next_cursor"]},
        headers=_h(setup["finance"]),
    ).json()
    ids = [s["source_id"] for s in first["browse"]["sources"] + rest["browse"]["sources"]]
    assert len(ids) == len(set(ids)) == 3 and rest["browse"]["next_cursor"] is None


def test_tags_dates_and_pinned_sources(client: TestClient, setup: dict[str, str]) -> None:
    headers = _h(setup["staff"])
    found = client.post("/v1/search", json={"query": "build system"}, headers=headers).json()
    notes = next(h for h in found["hits"] if h["filename"] == "notes.txt")
    tagged = client.put(
        f"/v1/sources/{notes['source_id']}/tags", json={"tags": ["engineering"]}, headers=headers
    )
    assert tagged.status_code == 200
    for mode in ("keyword", "vector"):
        body = {"query": "the build system", "mode": mode, "filters": {"tags": ["engineering"]}}
        hits = client.post("/v1/search", json=body, headers=headers).json()["hits"]
        assert {h["filename"] for h in hits} == {"notes.txt"}
    future = {"query": "vacation days", "filters": {"date_from": "2999-01-01T00:00:00Z"}}
    assert client.post("/v1/search", json=future, headers=headers).json()["outcome"] != "found"
    query = "vacation days and the build system"
    plain = client.post("/v1/search", json={"query": query}, headers=headers).json()["hits"]
    pinned = client.post(
        "/v1/search",
        json={"query": query, "filters": {"pinned_source_ids": [notes["source_id"]]}},
        headers=headers,
    ).json()["hits"]
    assert plain[0]["source_id"] != notes["source_id"]
    assert pinned[0]["source_id"] == notes["source_id"]
    assert {h["chunk_id"] for h in pinned} == {h["chunk_id"] for h in plain}
