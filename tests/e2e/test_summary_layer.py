"""The summary layer through the Dagster assets, the real engines and the API:
a compiled page per published version, in the same stores and behind the same
walls as its raw chunks; search by layer; the drift check and recompilation."""

from __future__ import annotations

import hashlib
import uuid

import dagster as dg
import pytest
from fastapi.testclient import TestClient

from assets.summary_layer import SUMMARY_DRIFT, summary_drift_check
from groundwork.tools.dispatch import ToolDispatcher
from pipelines.definitions import ALL_ASSETS
from resources.composition.platform import Platform
from retrieval_api.app import create_app
from tests.e2e.helpers import TENANT_STAGES, resource, run_pipeline, write_inbox

GUIDE = """# Travel guide

Night trains to the coast leave at 22:10 on Fridays. Sleeper cabins are booked online.

## Refunds

Unused tickets are refunded within seven days of the journey.
"""
PLAN = "# Hiring plan\n\nThe hiring budget for 2027 is 3.4M across four teams.\n"


@pytest.fixture(scope="module")
def setup(platform: Platform, index_prefix: str) -> dict[str, str]:
    tenant = f"sl-{uuid.uuid4().hex[:8]}"
    write_inbox(
        platform.settings.inbox_dir,
        tenant,
        {
            "guide.md": GUIDE,
            "canteen.md": "# Canteen\n\nThe canteen serves fish on Fridays and soup daily.\n",
            "finance/.subjects": "group:finance\n",
            "finance/plan.md": PLAN,
        },
    )
    instance = dg.DagsterInstance.ephemeral()
    results = run_pipeline(
        instance, tenant, platform.settings.default_model_key, resource(index_prefix)
    )
    checks = {e.check_name: e.passed for r in results for e in r.get_asset_check_evaluations()}
    assert checks.get("stores_agree") is True
    _, staff = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "staff")
    _, finance = platform.catalog.create_api_key(
        tenant, [f"tenant:{tenant}", "group:finance"], "finance"
    )
    return {"tenant": tenant, "staff": staff, "finance": finance, "prefix": index_prefix}


@pytest.fixture(scope="module")
def client(platform: Platform) -> TestClient:
    return TestClient(create_app(lambda: platform), raise_server_exceptions=False)


def _h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _search(client: TestClient, key: str, query: str, layer: str) -> dict:  # type: ignore[type-arg]
    response = client.post(
        "/v1/search", json={"query": query, "layer": layer, "limit": 10}, headers=_h(key)
    )
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_each_published_version_has_its_page_in_every_store(
    platform: Platform, setup: dict[str, str]
) -> None:
    tenant = setup["tenant"]
    with platform.pool.connection() as conn:
        rows = conn.execute(
            "SELECT p.source_id, p.version_id, m.kind, m.model, m.pointers, "
            "array_agg(c.chunk_id ORDER BY c.position) FILTER (WHERE c.layer = 'summary'), "
            "array_agg(c.chunk_id ORDER BY c.position) FILTER (WHERE c.layer = 'raw') "
            "FROM published_versions p JOIN version_summaries m USING (version_id) "
            "JOIN chunks c USING (version_id) WHERE p.tenant_id = %s "
            "GROUP BY p.source_id, p.version_id, m.kind, m.model, m.pointers",
            (tenant,),
        ).fetchall()
    assert len(rows) == 3  # every published version carries its compiled summary
    live_keywords = platform.keywords.chunk_ids(tenant, live_only=True)
    live_vectors = platform.vector_index(platform.settings.default_model_key).chunk_ids(
        tenant, live_only=True
    )
    for _source, _version, kind, model, pointers, pages, raw in rows:
        assert (kind, model) == ("extractive", "")
        assert pages and set(pointers) <= set(raw)
        # published by the same flip as the raw chunks: live in both stores
        assert set(pages) | set(raw) <= live_keywords & live_vectors


def test_search_by_layer_and_drill_down_from_a_summary(
    client: TestClient, setup: dict[str, str]
) -> None:
    raw = _search(client, setup["staff"], "night trains to the coast", "raw")
    assert raw["hits"] and {h["layer"] for h in raw["hits"]} == {"raw"}
    assert all(h["pointers"] == [] for h in raw["hits"])

    summary = _search(client, setup["staff"], "night trains to the coast", "summary")
    top = summary["hits"][0]
    assert {h["layer"] for h in summary["hits"]} == {"summary"}
    assert top["filename"] == "guide.md" and top["summary_kind"] == "extractive"
    assert "Night trains" in top["untrusted_text"] and "UNTRUSTED" in top["untrusted_text"]
    # the pointers are the drill-down ids: issued with the hit, readable verbatim
    assert top["pointers"]
    chunk = client.get(
        f"/v1/chunks/{top['pointers'][0]}",
        params={"turn": summary["turn_id"]},
        headers=_h(setup["staff"]),
    )
    assert chunk.status_code == 200 and "Night trains" in chunk.json()["untrusted_content"]

    first = _search(client, setup["staff"], "night trains to the coast", "summary_first")
    assert first["hits"] and {h["layer"] for h in first["hits"]} == {"raw"}
    assert first["hits"][0]["filename"] == "guide.md"
    assert all("summary" in h["leg_ranks"] for h in first["hits"])


def test_the_mcp_tool_searches_by_layer_through_the_same_service(
    platform: Platform, setup: dict[str, str]
) -> None:
    dispatcher = ToolDispatcher(lambda: platform)
    who = dispatcher.principal(setup["staff"])
    assert who is not None
    found = dispatcher.call(
        who, "search_files", {"query": "night trains to the coast", "layer": "summary"}
    )
    assert found.ok, found.payload
    hits = found.payload["hits"]
    assert hits and {h["layer"] for h in hits} == {"summary"} and hits[0]["pointers"]


def test_a_summary_is_behind_the_same_walls_as_its_document(
    platform: Platform, client: TestClient, setup: dict[str, str]
) -> None:
    for layer in ("summary", "summary_first"):
        staff = _search(client, setup["staff"], "hiring budget 2027", layer)
        assert "finance/plan.md" not in {h["filename"] for h in staff["hits"]}
        finance = _search(client, setup["finance"], "hiring budget 2027", layer)
        assert finance["hits"][0]["filename"] == "finance/plan.md"
    # another tenant's key sees nothing of this tenant's summaries
    other = f"sl-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(other, other, platform.settings.default_model_key)
    _, stranger = platform.catalog.create_api_key(other, [f"tenant:{other}"], "stranger")
    assert _search(client, stranger, "night trains", "summary")["hits"] == []


def test_summaries_read_the_compiled_pages(client: TestClient, setup: dict[str, str]) -> None:
    body = client.get(
        "/v1/summaries", params={"query": "refunds for unused tickets"}, headers=_h(setup["staff"])
    ).json()
    guide = next(s for s in body["summaries"] if s["title"] == "Travel guide")
    assert guide["compiled"] is True and guide["version_id"].startswith("ver_")
    assert guide["kind"] == "extractive" and guide["stale"] is False
    assert "Night trains to the coast" in guide["untrusted_summary"]
    assert guide["pointers"]


def test_the_drift_check_marks_a_summary_and_the_next_run_recompiles_it(
    platform: Platform, setup: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = setup["tenant"]
    model = platform.settings.default_model_key
    groundwork = resource(setup["prefix"])
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenant", [tenant])

    def summary_run() -> dg.ExecuteInProcessResult:
        return dg.materialize(
            [*ALL_ASSETS, summary_drift_check],
            selection=TENANT_STAGES,
            partition_key=tenant,
            instance=instance,
            resources={"groundwork": groundwork},
        )

    def drift(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
        [found] = [e for e in result.get_asset_check_evaluations() if e.check_name == SUMMARY_DRIFT]
        return found

    assert drift(summary_run()).passed is True
    # the raw chunks of the canteen's published version change under its summary
    new_body = "The canteen serves ramen on Fridays and soup daily."
    with platform.pool.connection() as conn:
        version_id = conn.execute(
            "SELECT p.version_id FROM published_versions p JOIN sources s USING (source_id) "
            "WHERE p.tenant_id = %s AND s.filename = 'canteen.md' AND p.model_key = %s",
            (tenant, model),
        ).fetchone()[0]  # type: ignore[index]
        conn.execute(
            "UPDATE chunks SET body = %s, content_hash = %s "
            "WHERE version_id = %s AND layer = 'raw' AND position = 0",
            (new_body, hashlib.sha256(new_body.encode()).hexdigest(), version_id),
        )
    # one of the three summaries drifted: a third, within a threshold of a half,
    # is reported and nothing is marked
    monkeypatch.setenv("GROUNDWORK_SUMMARY_DRIFT_THRESHOLD", "0.5")
    tolerated = drift(summary_run())
    assert tolerated.passed is True and tolerated.metadata["marked"].value == 0
    assert abs(tolerated.metadata["drift_rate"].value - 1 / 3) < 1e-9
    assert platform.catalog.pending_work(tenant, model)["summarize"] == 0
    # over the default threshold (10%) it is marked for recompilation
    monkeypatch.delenv("GROUNDWORK_SUMMARY_DRIFT_THRESHOLD")
    flagged = drift(summary_run())
    assert flagged.passed is False and flagged.severity == dg.AssetCheckSeverity.ERROR
    assert flagged.metadata["drifted"].value == 1 and flagged.metadata["marked"].value == 1
    assert flagged.metadata["compiled"].value == 3
    assert platform.catalog.pending_work(tenant, model)["summarize"] == 1

    # the next run recompiles it (the same run's check is green again), and the
    # version goes through the indexes and publication once more
    again = summary_run()
    assert drift(again).passed is True
    run_pipeline(instance, tenant, model, groundwork)
    assert set(platform.catalog.pending_work(tenant, model).values()) == {0}
    with platform.pool.connection() as conn:
        page = conn.execute(
            "SELECT string_agg(body, ' ') FROM chunks WHERE version_id = %s AND layer = 'summary'",
            (version_id,),
        ).fetchone()[0]  # type: ignore[index]
    assert "ramen" in page


def test_a_drift_check_that_could_not_check_is_not_green(setup: dict[str, str]) -> None:
    ghost = f"gone-{uuid.uuid4().hex[:8]}"  # a partition whose tenant does not exist
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenant", [ghost])
    # the summary stage finds no tenant and no work; its check cannot check
    result = dg.materialize(
        [*ALL_ASSETS, summary_drift_check],
        selection=["summary_layer"],
        partition_key=ghost,
        instance=instance,
        resources={"groundwork": resource(setup["prefix"])},
    )
    [evaluation] = result.get_asset_check_evaluations()
    assert evaluation.passed is False
    assert evaluation.severity == dg.AssetCheckSeverity.WARN
    assert "no tenant" in str(evaluation.metadata["skipped"].value)
