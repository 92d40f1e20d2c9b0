"""Deletion, permission changes, the folder connector's removals and tenant
erasure, against the real engines, with the tombstone proof."""

from __future__ import annotations

import uuid

import dagster as dg
import pytest
from fastapi.testclient import TestClient

from assets.lifecycle import deletion_sweep
from groundwork.lifecycle import erase_tenant, prove_tombstones
from groundwork.ports import DEFAULT_KEY_SCOPES, AccessScope
from groundwork.retrieval.kernel import SearchMode, SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found
from pipelines.definitions import ALL_ASSETS
from resources.composition.platform import Platform
from retrieval_api.app import create_app
from tests.e2e.helpers import resource, run_pipeline, write_inbox

DOCS = {
    "quota.md": "# Quota\n\nERR-4021 means the storage quota is exceeded.\n",
    "parking.md": "# Parking\n\nVisitors park on level P2.\n",
    "shared.md": "# Shared\n\nThis text is identical in two tenants.\n",
}


@pytest.fixture
def tenant(platform: Platform, index_prefix: str) -> tuple[str, str, dg.DagsterInstance]:
    tenant_id = f"z-{uuid.uuid4().hex[:8]}"
    write_inbox(platform.settings.inbox_dir, tenant_id, DOCS)
    instance = dg.DagsterInstance.ephemeral()
    run_pipeline(instance, tenant_id, platform.settings.default_model_key, resource(index_prefix))
    _, key = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "staff")
    return tenant_id, key, instance


def _sources(platform: Platform, tenant_id: str, query: str) -> set[str]:
    found: set[str] = set()
    for mode in (SearchMode.KEYWORD, SearchMode.VECTOR):
        outcome = hybrid_search(
            AccessScope(tenant_id, (f"tenant:{tenant_id}", "group:finance")),
            SearchRequest(query, mode=mode, limit=10),
            platform.search_engines(platform.settings.default_model_key),
        )
        if isinstance(outcome, Found):
            found |= {h.chunk.filename for h in outcome.hits}
    return found


def _source_id(platform: Platform, tenant_id: str, filename: str) -> str:
    with platform.pool.connection() as conn:
        row = conn.execute(
            "SELECT source_id FROM sources WHERE tenant_id = %s AND filename = %s",
            (tenant_id, filename),
        ).fetchone()
    assert row is not None
    return str(row[0])


def _sweep(
    instance: dg.DagsterInstance, tenant_id: str, index_prefix: str
) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        ALL_ASSETS,
        selection=[deletion_sweep],
        partition_key=tenant_id,
        instance=instance,
        resources={"groundwork": resource(index_prefix)},
    )


def test_delete_is_invisible_at_once_then_purged_with_proof(
    platform: Platform, tenant, index_prefix: str
) -> None:
    tenant_id, key, instance = tenant
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    headers = {"Authorization": f"Bearer {key}"}
    hit = client.post("/v1/search", json={"query": "ERR-4021 quota"}, headers=headers).json()[
        "hits"
    ][0]
    source_id = hit["source_id"]
    deleted = client.delete(f"/v1/sources/{source_id}", headers=headers)
    assert deleted.status_code == 202 and deleted.json()["state"] == "deleting"
    # invisible in both legs immediately, before any sweep
    assert "quota.md" not in _sources(platform, tenant_id, "ERR-4021 quota exceeded")
    model = platform.settings.default_model_key
    assert (
        platform.vector_index(model)
        .chunk_ids(tenant_id, live_only=True)
        .isdisjoint({hit["chunk_id"]})
    )
    assert hit["chunk_id"] not in platform.keywords.chunk_ids(tenant_id, live_only=True)
    # the sweep purges every store and the check proves it
    result = _sweep(instance, tenant_id, index_prefix)
    checks = result.get_asset_check_evaluations()
    assert [(c.check_name, c.passed) for c in checks] == [("no_tombstoned_chunks_remain", True)]
    assert hit["chunk_id"] not in platform.keywords.chunk_ids(tenant_id, live_only=False)
    assert hit["chunk_id"] not in platform.vector_index(model).chunk_ids(tenant_id, live_only=False)
    proof = prove_tombstones(platform.catalog, platform.indexes(), tenant_id)
    assert proof.tombstoned >= 1 and proof.clean
    # the citation survives and reports the source removed, without the erased text
    checked = client.get(f"/v1/citations/{hit['citation_id']}", headers=headers).json()
    assert checked["status"] == "removed" and checked["citation"]["location"]
    assert checked["citation"]["untrusted_excerpt"] == ""
    assert checked["citation"]["heading_path"] == []
    assert client.get(f"/v1/sources/{source_id}/status", headers=headers).status_code == 404


def test_the_proof_fails_when_a_store_still_holds_a_tombstoned_chunk(
    platform: Platform, tenant, index_prefix: str
) -> None:
    tenant_id, _, instance = tenant
    from groundwork.lifecycle import request_deletion
    from groundwork.ports import IndexedChunk

    source_id = _source_id(platform, tenant_id, "parking.md")
    chunk_id = platform.catalog.source_chunk_ids(source_id)[0]
    request_deletion(platform.catalog, platform.indexes(), tenant_id, source_id)
    _sweep(instance, tenant_id, index_prefix)
    # a store that missed the purge (simulated by writing the chunk back)
    platform.keywords.upsert(
        [
            IndexedChunk(
                chunk_id, tenant_id, source_id, "v-old", ("x",), "text/markdown", "t", "ghost", "h"
            )
        ]
    )
    proof = prove_tombstones(platform.catalog, platform.indexes(), tenant_id)
    assert not proof.clean and proof.leftovers["keyword"] == (chunk_id,)


def test_a_file_removed_from_the_inbox_is_deleted(
    platform: Platform, tenant, index_prefix: str
) -> None:
    tenant_id, _, instance = tenant
    (platform.settings.inbox_dir / tenant_id / "parking.md").unlink()
    results = run_pipeline(
        instance, tenant_id, platform.settings.default_model_key, resource(index_prefix)
    )
    registrations = results[0].asset_materializations_for_node("source_registrations")[0]
    assert registrations.metadata["removed"].value == 1
    assert "parking.md" not in _sources(platform, tenant_id, "where do visitors park P2")
    rerun = run_pipeline(
        instance, tenant_id, platform.settings.default_model_key, resource(index_prefix)
    )
    assert (
        rerun[0]
        .asset_materializations_for_node("source_registrations")[0]
        .metadata["removed"]
        .value
        == 0
    )


def test_revoking_and_granting_reaches_both_stores(platform: Platform, tenant) -> None:
    tenant_id, key, _ = tenant
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    source_id = _source_id(platform, tenant_id, "parking.md")
    body = {"subjects": ["group:finance"]}
    # re-scoping can widen access: a reader's key may not, an administrator's may
    refused = client.put(
        f"/v1/sources/{source_id}/subjects", json=body, headers={"Authorization": f"Bearer {key}"}
    )
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
    _, admin = platform.catalog.create_api_key(
        tenant_id, [f"tenant:{tenant_id}"], "admin", [*DEFAULT_KEY_SCOPES, "sources:admin"]
    )
    headers = {"Authorization": f"Bearer {admin}"}
    revoked = client.put(f"/v1/sources/{source_id}/subjects", json=body, headers=headers)
    assert revoked.status_code == 200
    staff = AccessScope(tenant_id, (f"tenant:{tenant_id}",))
    engines = platform.search_engines(platform.settings.default_model_key)
    for mode in (SearchMode.KEYWORD, SearchMode.VECTOR):
        outcome = hybrid_search(staff, SearchRequest("visitors park P2", mode=mode), engines)
        assert not isinstance(outcome, Found) or all(
            h.chunk.filename != "parking.md" for h in outcome.hits
        )
    finance = AccessScope(tenant_id, ("group:finance",))
    granted = hybrid_search(
        finance, SearchRequest("visitors park P2", mode=SearchMode.KEYWORD), engines
    )
    assert isinstance(granted, Found) and granted.hits[0].chunk.filename == "parking.md"
    # the revoked key can no longer even see that the source exists
    assert client.get(f"/v1/sources/{source_id}/status", headers=headers).status_code == 404


def test_a_permission_change_not_yet_in_the_indexes_is_still_enforced(
    platform: Platform, tenant
) -> None:
    tenant_id, _, _ = tenant
    source_id = _source_id(platform, tenant_id, "parking.md")
    platform.catalog.set_source_subjects(
        tenant_id, source_id, ["group:finance"]
    )  # indexes not updated yet
    outcome = hybrid_search(
        AccessScope(tenant_id, (f"tenant:{tenant_id}",)),
        SearchRequest("visitors park P2", mode=SearchMode.KEYWORD),
        platform.search_engines(platform.settings.default_model_key),
    )
    assert not isinstance(outcome, Found) or all(
        h.chunk.filename != "parking.md" for h in outcome.hits
    )


def test_erasing_a_tenant_removes_everything_it_owns_and_keeps_shared_bytes(
    platform: Platform, tenant, index_prefix: str
) -> None:
    tenant_id, _, _ = tenant
    other = f"y-{uuid.uuid4().hex[:8]}"
    write_inbox(platform.settings.inbox_dir, other, {"shared.md": DOCS["shared.md"]})
    run_pipeline(
        dg.DagsterInstance.ephemeral(),
        other,
        platform.settings.default_model_key,
        resource(index_prefix),
    )
    shared_key = next(
        k for k in platform.blobs.list_keys() if platform.blobs.get(k) == DOCS["shared.md"].encode()
    )
    erase_tenant(platform.catalog, platform.indexes(), platform.blobs, tenant_id)
    assert platform.catalog.get_tenant(tenant_id) is None
    assert platform.keywords.chunk_ids(tenant_id, live_only=False) == set()
    for vectors in platform.indexes().vectors:
        assert vectors.chunk_ids(tenant_id, live_only=False) == set()
    assert platform.blobs.exists(shared_key)  # still referenced by the other tenant
    assert _sources(platform, other, "identical text in two tenants") == {"shared.md"}


def test_editing_a_subjects_file_rescopes_the_sources_below_it(
    platform: Platform, index_prefix: str
) -> None:
    """The defect: the fingerprint changed but the folder connector answered
    Unchanged and the subjects never moved."""
    tenant_id = f"z-{uuid.uuid4().hex[:8]}"
    write_inbox(
        platform.settings.inbox_dir,
        tenant_id,
        {"finance/.subjects": "group:finance\n", "finance/plan.md": "# Plan\n\nBudget BX-7731.\n"},
    )
    instance = dg.DagsterInstance.ephemeral()
    model = platform.settings.default_model_key
    run_pipeline(instance, tenant_id, model, resource(index_prefix))
    finance = AccessScope(tenant_id, ("group:finance",))
    hr = AccessScope(tenant_id, ("group:hr",))
    engines = platform.search_engines(model)

    def visible(scope: AccessScope) -> dict[str, bool]:
        return {
            mode.value: isinstance(
                hybrid_search(scope, SearchRequest("Budget BX-7731", mode=mode), engines), Found
            )
            for mode in (SearchMode.KEYWORD, SearchMode.VECTOR)
        }

    assert visible(finance) == {"keyword": True, "vector": True}
    assert visible(hr) == {"keyword": False, "vector": False}
    write_inbox(platform.settings.inbox_dir, tenant_id, {"finance/.subjects": "group:hr\n"})
    run_pipeline(instance, tenant_id, model, resource(index_prefix))
    assert visible(finance) == {"keyword": False, "vector": False}
    assert visible(hr) == {"keyword": True, "vector": True}
    # both stores hold the new subjects, not only the catalog's re-check
    source_id = _source_id(platform, tenant_id, "finance/plan.md")
    with platform.pool.connection() as conn:
        rows = conn.execute(
            f"SELECT DISTINCT subjects FROM embeddings_{model} WHERE source_id = %s",
            (source_id,),
        ).fetchall()
    assert [r[0] for r in rows] == [["group:hr"]]
    hits = platform.keywords.search(hr, "BX-7731", 5)
    assert [h.source_id for h in hits] == [source_id]
