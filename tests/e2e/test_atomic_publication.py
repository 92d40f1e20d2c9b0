"""Publication is atomic (issue 13): a source's published version stays whole
and alone until the next one is published; no search ever sees a chunk of an
unpublished version, a mix of two versions, or nothing for a source that had a
published version. Checked through the HTTP API after every pipeline stage, and
with eight threads searching while a re-ingest runs end to end."""

from __future__ import annotations

import threading
import time
import uuid

import dagster as dg
import pytest
from fastapi.testclient import TestClient

from assets.partitions import tenant_model_key
from groundwork.stages.publication import retire_superseded
from pipelines.definitions import ALL_ASSETS
from resources.composition.platform import Platform
from retrieval_api.app import create_app
from tests.e2e.helpers import MODEL_STAGES, TENANT_STAGES, resource, run_pipeline, write_inbox

#: v1 has five sections, v2 three: a shorter new version must not leave v1's
#: tail searchable, nor lose v1's tail before v2 is published.
V1 = "\n\n".join(
    [
        "# Harbour policy",
        *[
            f"## Section {n}\n\nLantern harbour rule {n}: boats moor at AURORA-77{n}1 "
            f"berths only. Keywords: oldversion ferry quay beacon.\n"
            for n in range(1, 6)
        ],
    ]
)
V2 = "\n\n".join(
    [
        "# Harbour policy",
        *[
            f"## Section {n}\n\nCopper meadow rule {n}: boats moor at ZENITH-44{n}2 "
            f"berths only. Keywords: newversion ferry quay beacon.\n"
            for n in range(1, 4)
        ],
    ]
)
SHARED_QUERY = "ferry quay beacon harbour"


def _hits(client: TestClient, key: str, query: str, mode: str = "hybrid") -> list[dict]:
    response = client.post(
        "/v1/search",
        json={"query": query, "mode": mode, "limit": 20},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 200, response.text
    return response.json()["hits"]


def _versions(hits: list[dict]) -> set[str]:
    return {h["citation"]["source_version_id"] for h in hits}


def _published_version(platform: Platform, tenant_id: str) -> str:
    with platform.pool.connection() as conn:
        row = conn.execute(
            "SELECT current_version_id FROM sources WHERE tenant_id = %s", (tenant_id,)
        ).fetchone()
    assert row is not None
    return str(row[0])


@pytest.fixture
def published_v1(platform: Platform, index_prefix: str):
    tenant_id = f"pub-{uuid.uuid4().hex[:8]}"
    write_inbox(platform.settings.inbox_dir, tenant_id, {"policy.md": V1})
    instance = dg.DagsterInstance.ephemeral()
    run_pipeline(instance, tenant_id, platform.settings.default_model_key, resource(index_prefix))
    _, key = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "staff")
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    v1 = _published_version(platform, tenant_id)
    return tenant_id, key, instance, client, v1


def _assert_exactly(client: TestClient, key: str, version: str, present: str, absent: str) -> None:
    for mode in ("hybrid", "keyword", "vector"):
        shared = _hits(client, key, SHARED_QUERY, mode)
        assert shared, f"{mode}: the source had a published version and must be found"
        assert _versions(shared) == {version}, f"{mode}: mixed or unpublished versions"
    kept = _hits(client, key, present, "keyword")
    assert kept and _versions(kept) == {version}
    assert all(
        absent.split()[0] not in h["untrusted_text"] for h in _hits(client, key, SHARED_QUERY)
    )
    assert _hits(client, key, absent, "keyword") == []


def test_published_version_stays_whole_until_the_next_is_published(
    platform: Platform, published_v1, index_prefix: str
) -> None:
    tenant_id, key, instance, client, v1 = published_v1
    model = platform.settings.default_model_key
    _assert_exactly(client, key, v1, "oldversion AURORA-7751", "newversion ZENITH-4412")
    # the whole of v1, tail included, is searchable
    assert len({h["chunk_id"] for h in _hits(client, key, "oldversion", "keyword")}) >= 5

    (platform.settings.inbox_dir / tenant_id / "policy.md").write_text(V2)
    groundwork = resource(index_prefix)
    stages: list[tuple[str, dg.MultiPartitionKey | str]] = [
        *[(name, tenant_id) for name in TENANT_STAGES],
        *[(name, tenant_model_key(tenant_id, model)) for name in MODEL_STAGES],
    ]
    v2 = ""
    for name, partition in stages:
        result = dg.materialize(
            ALL_ASSETS,
            selection=[name],
            partition_key=partition,
            instance=instance,
            resources={"groundwork": groundwork},
        )
        assert result.success, name
        if name != "published_index":
            _assert_exactly(client, key, v1, "oldversion AURORA-7751", "newversion ZENITH-4412")
        else:
            v2 = _published_version(platform, tenant_id)
            assert v2 != v1
            _assert_exactly(client, key, v2, "newversion ZENITH-4412", "oldversion AURORA-7751")
    # the old version's rows left both indexes once v2 was published; its chunk
    # rows stay for the grace window (searches in flight re-check against them)
    table = f"embeddings_{model}"

    def rows() -> tuple[dict[str, int], dict[str, int]]:
        with platform.pool.connection() as conn:
            chunk_rows = conn.execute(
                "SELECT version_id, count(*) FROM chunks WHERE tenant_id = %s GROUP BY 1",
                (tenant_id,),
            ).fetchall()
            vector_rows = conn.execute(
                f"SELECT version_id, count(*) FROM {table} WHERE tenant_id = %s GROUP BY 1",
                (tenant_id,),
            ).fetchall()
        return dict(chunk_rows), dict(vector_rows)

    chunk_rows, vector_rows = rows()
    assert set(vector_rows) == {v2} and set(chunk_rows) == {v1, v2}
    assert len(platform.keywords.chunk_ids(tenant_id, live_only=False)) == vector_rows[v2]
    retire_superseded(
        platform.catalog, platform.vector_index(model), platform.keywords, tenant_id, (), 0.0
    )
    chunk_rows, vector_rows = rows()
    assert chunk_rows == vector_rows and set(chunk_rows) == {v2}


def test_concurrent_searches_never_see_mixed_or_missing_versions(
    platform: Platform, published_v1, index_prefix: str
) -> None:
    tenant_id, key, instance, client, v1 = published_v1
    model = platform.settings.default_model_key
    (platform.settings.inbox_dir / tenant_id / "policy.md").write_text(V2)
    stop = threading.Event()
    seen: list[frozenset[str]] = []
    errors: list[str] = []
    lock = threading.Lock()

    outcomes: list[str] = []

    def searcher() -> None:
        local = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
        while not stop.is_set():
            response = local.post(
                "/v1/search",
                json={"query": SHARED_QUERY, "mode": "hybrid", "limit": 20},
                headers={"Authorization": f"Bearer {key}"},
            )
            with lock:
                if response.status_code != 200:
                    errors.append(response.text)
                    continue
                body = response.json()
                seen.append(frozenset(_versions(body["hits"])))
                if not body["hits"]:
                    outcomes.append(f"{time.monotonic():.2f} {body['outcome']}")

    threads = [threading.Thread(target=searcher) for _ in range(8)]
    for thread in threads:
        thread.start()
    try:
        run_pipeline(instance, tenant_id, model, resource(index_prefix))
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    v2 = _published_version(platform, tenant_id)
    assert _versions(_hits(client, key, SHARED_QUERY)) == {v2}
    assert not errors, errors[:3]
    assert seen, "the searchers ran"
    bad = [s for s in seen if s not in ({v1}, {v2})]
    assert not bad, (
        f"{len(bad)} of {len(seen)} searches saw a mixed or empty result: {bad[:5]} {outcomes[:5]}"
    )
