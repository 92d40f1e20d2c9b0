"""layer=auto through the real engines, the API and the MCP tool (issue #36):
each query answered from the layer the router picks, the same hits as asking
for that layer, and the answer saying which layer and why."""

from __future__ import annotations

from fastapi.testclient import TestClient

from groundwork.tools.dispatch import ToolDispatcher
from resources.composition.platform import Platform
from tests.e2e.test_summary_layer import _h, _search, client, setup

__all__ = ["client", "setup"]  # the summary layer's module fixtures, a tenant of this module's

OVERVIEW = "Give me an overview of the travel guide"
SPECIFIC = "When do night trains to the coast leave?"


def _ids(body: dict) -> list[str]:  # type: ignore[type-arg]
    return [h["chunk_id"] for h in body["hits"]]


def test_search_auto_answers_from_the_routed_layer_and_names_it(
    client: TestClient, setup: dict[str, str]
) -> None:
    broad = _search(client, setup["staff"], OVERVIEW, "auto")
    assert broad["route"] == {"layer": "summary_first", "reason": "overview wording"}
    assert broad["hits"] and _ids(broad) == _ids(
        _search(client, setup["staff"], OVERVIEW, "summary_first")
    )
    assert all("summary" in h["leg_ranks"] for h in broad["hits"])

    specific = _search(client, setup["staff"], SPECIFIC, "auto")
    assert specific["route"] == {"layer": "raw", "reason": "a specific question or claim"}
    assert specific["hits"][0]["filename"] == "guide.md"
    assert _ids(specific) == _ids(_search(client, setup["staff"], SPECIFIC, "raw"))
    # a layer asked for by name is not routed: no route to report
    assert _search(client, setup["staff"], SPECIFIC, "raw")["route"] is None


def test_context_auto_names_its_route(client: TestClient, setup: dict[str, str]) -> None:
    response = client.post(
        "/v1/context", json={"query": OVERVIEW, "layer": "auto"}, headers=_h(setup["staff"])
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["outcome"] == "found" and body["items"]
    assert body["route"] == {"layer": "summary_first", "reason": "overview wording"}
    plain = client.post("/v1/context", json={"query": OVERVIEW}, headers=_h(setup["staff"]))
    assert plain.json()["route"] is None


def test_the_search_tool_routes_through_the_same_service(
    platform: Platform, setup: dict[str, str]
) -> None:
    dispatcher = ToolDispatcher(lambda: platform)
    who = dispatcher.principal(setup["staff"])
    assert who is not None
    found = dispatcher.call(who, "search_files", {"query": OVERVIEW, "layer": "auto"})
    assert found.ok, found.payload
    assert found.payload["route"] == {"layer": "summary_first", "reason": "overview wording"}
    assert found.payload["hits"]
    refused = dispatcher.call(who, "search_files", {"query": OVERVIEW, "layer": "everything"})
    assert not refused.ok
