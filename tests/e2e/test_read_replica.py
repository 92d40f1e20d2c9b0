"""A streaming read replica for the search path (issue 14), against a real hot
standby made from the embedded primary with pg_basebackup.

The rule under test (resources/postgres/read_replica.py): the vector leg reads
the replica only when it holds the tenant's search generation as the primary
does; the serving model, the publication pointer, sources' state and subjects
(the result-time re-check) and every write stay on the primary. Lag is real
here: the standby's WAL replay is paused (pg_wal_replay_pause) while a
publication, a deletion and a permission change are made on the primary.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from groundwork.lifecycle import purge_deleted
from groundwork.ports import DEFAULT_KEY_SCOPES, AccessScope, IndexedChunk, VectorRecord
from groundwork.services.scopes import Scope
from groundwork.stages.registration import register_file
from resources.composition.platform import EngineEndpoints, Platform, connect
from resources.composition.settings import GroundworkSettings
from resources.engines.postgres_standby import EmbeddedStandby
from resources.postgres.read_replica import ReplicaUse
from retrieval_api.app import create_app
from testbed.index_records import chunk, new_tenant, unit_vector
from tests.conftest import TEST_DATABASE
from tests.e2e.helpers import publish_registered

FERRY_QUERY = "which berth do ferries moor at"
QUERIES = (
    "which berth do ferries moor at",
    "vault door opening procedure with two keys",
    "quarterly budget for the finance team",
)


@pytest.fixture(scope="module")
def standby(engines: EngineEndpoints, settings: GroundworkSettings) -> Iterator[EmbeddedStandby]:
    if engines.postgres is None:
        pytest.skip("the standby is made from the embedded primary")
    made = EmbeddedStandby(engines.server_url, settings.home / "pgstandby-test")
    made.destroy()  # a standby left by an interrupted run starts over
    made.start()
    made.wait_for_replay()
    yield made
    made.destroy()


@pytest.fixture(scope="module")
def replicated(
    standby: EmbeddedStandby,
    settings: GroundworkSettings,
    engines: EngineEndpoints,
    index_prefix: str,
) -> Iterator[Platform]:
    """The platform with GROUNDWORK_DATABASE_REPLICA_URL naming the standby."""
    p = connect(
        replace(settings, database_replica_url=standby.uri("postgres")),
        engines,
        database=TEST_DATABASE,
        index_prefix=index_prefix,
    )
    assert p.replica is not None
    yield p
    p.close()


def _publish(platform: Platform, tenant: str, files: dict[str, tuple[str, Sequence[str]]]) -> dict:
    """Register files (name -> text, subjects) and take them through every stage
    to publication, with the functions the assets call; name -> source id."""
    ids = {}
    for name, (text, subjects) in files.items():
        ids[name] = register_file(
            platform.catalog,
            platform.blobs,
            tenant_id=tenant,
            origin=f"api:{name}",
            filename=name,
            data=text.encode(),
            subjects=list(subjects),
            media_type="text/markdown",
        ).source_id
    publish_registered(platform, tenant)
    return ids


def _tenant(platform: Platform, subjects: Sequence[str] = ()) -> tuple[str, dict[str, str]]:
    """A new tenant and the headers of a key that may also change permissions."""
    tenant = f"rr-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(
        tenant,
        [f"tenant:{tenant}", *subjects],
        "replica test",
        scopes=(*DEFAULT_KEY_SCOPES, Scope.ADMIN),
    )
    return tenant, {"Authorization": f"Bearer {key}"}


def _search(client: TestClient, headers: dict, query: str, mode: str = "vector") -> dict:
    response = client.post(
        "/v1/search", json={"query": query, "mode": mode, "limit": 10}, headers=headers
    )
    assert response.status_code == 200, response.text
    return response.json()


def _counts(use: ReplicaUse) -> tuple[int, int, int]:
    return use.served, use.behind, use.failed


def _on_standby(standby: EmbeddedStandby, query: str, *params: object) -> list[tuple]:
    with psycopg.connect(standby.uri(TEST_DATABASE)) as conn:
        return conn.execute(query, params).fetchall()


def _table(platform: Platform) -> str:
    return f"embeddings_{platform.settings.default_model_key}"


def _generation(platform: Platform, tenant: str) -> int:
    with platform.pool.connection() as conn:
        row = conn.execute(
            "SELECT generation FROM search_generations WHERE tenant_id = %s", (tenant,)
        ).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.parametrize("kind", ["vector", "postgres keyword"])
def test_every_change_to_a_tenants_index_rows_raises_its_search_generation(
    kind: str, platform: Platform, pg_keyword_platform: Platform
) -> None:
    """What the replica check rests on: every change to a tenant's rows that a
    search could see raises the tenant's generation (in the same transaction);
    writing hidden rows, a change that touches no row, or another tenant's
    change does not."""
    model = platform.vector_index(platform.settings.default_model_key)
    index = model if kind == "vector" else pg_keyword_platform.keywords
    tenant, other = new_tenant(), new_tenant()

    def write(*chunks: IndexedChunk) -> None:
        if kind == "vector":
            vectors = [unit_vector(i, model.model.dimension) for i in range(len(chunks))]
            model.upsert([VectorRecord(c, v) for c, v in zip(chunks, vectors, strict=True)])
        else:
            pg_keyword_platform.keywords.upsert(list(chunks))

    first = chunk(tenant, "alpha", source_id="s1", version_id="v1")
    write(first, chunk(tenant, "beta", source_id="s1", version_id="v1"))
    assert _generation(platform, tenant) == 0  # hidden rows: nothing a search sees
    steps = [
        lambda: index.set_versions_live(tenant, ["v1"], True),
        lambda: write(replace(first, subjects=("team:b",))),  # a live row rewritten
        lambda: index.set_subjects(tenant, "s1", ["team:c"]),
        lambda: index.set_tags(tenant, "s1", ["red"]),
        lambda: index.set_live(tenant, "s1", None, False),
        lambda: index.delete_versions(tenant, ["v1"]),
    ]
    for number, step in enumerate(steps, start=1):
        step()
        assert _generation(platform, tenant) == number
    assert index.set_live(tenant, "s1", None, True) == 0  # no rows left: no change
    write(chunk(tenant, "gamma", source_id="s2", version_id="v2"))
    assert index.delete_source(tenant, "s2") == 1
    assert index.delete_tenant(tenant) == 0
    assert _generation(platform, tenant) == len(steps) + 1
    assert _generation(platform, other) == 0


DOCS = {
    "harbour.md": "# Harbour\n\nFerries moor at berth AURORA-7 only; the harbour master assigns it.\n",
    "vault.md": "# Vault\n\nThe vault door opens after two keys turn at once.\n",
    "budget.md": "# Budget\n\nThe finance team's quarterly budget is 40,000 euros for travel.\n",
}


def test_a_search_through_the_replica_answers_as_the_primary_does(
    replicated: Platform, platform: Platform, standby: EmbeddedStandby
) -> None:
    tenant, headers = _tenant(platform)
    _publish(platform, tenant, {n: (t, [f"tenant:{tenant}"]) for n, t in DOCS.items()})
    standby.wait_for_replay()
    through_replica = TestClient(create_app(lambda: replicated), raise_server_exceptions=False)
    primary_only = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    use = replicated.replica.use  # type: ignore[union-attr]
    before = _counts(use)
    for query in QUERIES:
        for mode in ("vector", "hybrid"):
            got = _search(through_replica, headers, query, mode)
            expected = _search(primary_only, headers, query, mode)
            assert got["outcome"] == expected["outcome"] == "found"
            assert [(h["chunk_id"], h["rank"], round(h["score"], 9)) for h in got["hits"]] == [
                (h["chunk_id"], h["rank"], round(h["score"], 9)) for h in expected["hits"]
            ]
    served, behind, failed = _counts(use)
    assert served - before[0] == 2 * len(QUERIES)  # every vector leg read the replica
    assert (behind, failed) == before[1:]
    assert platform.replica is None  # the comparison really had no replica

    # With replay paused, what a search hands out still resolves at once: the
    # citation and issued ids were written to, and are read from, the primary.
    standby.pause_replay()
    try:
        found = _search(through_replica, headers, QUERIES[0])
        assert use.served == served + 1  # nothing changed for the tenant: the replica answered
        hit = found["hits"][0]
        checked = through_replica.get(f"/v1/citations/{hit['citation_id']}", headers=headers)
        assert checked.status_code == 200 and checked.json()["status"] == "exists"
        chunk = through_replica.get(
            f"/v1/chunks/{hit['chunk_id']}", params={"turn": found["turn_id"]}, headers=headers
        )
        assert chunk.status_code == 200 and "AURORA-7" in chunk.json()["untrusted_content"]
        assert not _on_standby(
            standby, "SELECT 1 FROM citations WHERE citation_id = %s", hit["citation_id"]
        )  # the replica really lags behind the citation it never served
    finally:
        standby.resume_replay()


def test_a_publication_the_replica_has_not_replayed_is_searched_on_the_primary(
    replicated: Platform, standby: EmbeddedStandby
) -> None:
    tenant, headers = _tenant(replicated)
    v1 = "# Harbour\n\nFerries moor at berth AURORA-7 only; the harbour master assigns it.\n"
    v2 = "# Harbour\n\nFerries moor at berth ZENITH-9 now; the old berth is closed for works.\n"
    ids = _publish(replicated, tenant, {"harbour.md": (v1, [f"tenant:{tenant}"])})
    standby.wait_for_replay()
    client = TestClient(create_app(lambda: replicated), raise_server_exceptions=False)
    use = replicated.replica.use  # type: ignore[union-attr]
    first = _search(client, headers, FERRY_QUERY)["hits"]
    [old_version] = {h["citation"]["source_version_id"] for h in first}

    standby.pause_replay()
    try:
        ids |= _publish(
            replicated,
            tenant,
            {
                "harbour.md": (v2, [f"tenant:{tenant}"]),
                "tides.md": (
                    "# Tides\n\nFerries moor at the tide berth when high tide comes at 06:40.\n",
                    [f"tenant:{tenant}"],
                ),
            },
        )
        with replicated.pool.connection() as conn:
            published = {
                r[0]: r[1]
                for r in conn.execute(
                    "SELECT source_id, version_id FROM published_versions WHERE source_id = ANY(%s)",
                    (list(ids.values()),),
                ).fetchall()
            }
        assert published[ids["harbour.md"]] != old_version
        # the lag is real: the replica still serves v1 and has never heard of tides.md
        on_replica = _on_standby(
            standby,
            f"SELECT DISTINCT source_id, version_id FROM {_table(replicated)} WHERE tenant_id = %s AND live",
            tenant,
        )
        assert on_replica == [(ids["harbour.md"], old_version)]

        behind = use.behind
        for mode in ("vector", "hybrid"):
            found = _search(client, headers, FERRY_QUERY, mode)
            assert found["outcome"] == "found"  # never a failure for want of a replayed publication
            versions = {(h["source_id"], h["citation"]["source_version_id"]) for h in found["hits"]}
            assert versions == set(published.items())  # v2 and the new source, nothing unpublished
            assert any("ZENITH-9" in h["untrusted_text"] for h in found["hits"])
        assert use.behind == behind + 2  # both vector legs ran on the primary
    finally:
        standby.resume_replay()
    standby.wait_for_replay()
    served = use.served
    again = _search(client, headers, FERRY_QUERY)
    assert use.served == served + 1  # caught up: the replica answers again, with the same
    assert {(h["source_id"], h["citation"]["source_version_id"]) for h in again["hits"]} == set(
        published.items()
    )


def test_erasure_and_revocation_the_replica_has_not_replayed_never_reach_a_search(
    replicated: Platform, standby: EmbeddedStandby
) -> None:
    tenant, headers = _tenant(replicated, ["group:finance"])
    ids = _publish(replicated, tenant, {n: (t, ["group:finance"]) for n, t in DOCS.items()})
    standby.wait_for_replay()
    client = TestClient(create_app(lambda: replicated), raise_server_exceptions=False)
    use = replicated.replica.use  # type: ignore[union-attr]
    queries = {
        "vault.md": "vault door opening with two keys",
        "budget.md": "finance quarterly budget",
    }
    for name, query in queries.items():
        assert ids[name] in {h["source_id"] for h in _search(client, headers, query)["hits"]}

    standby.pause_replay()
    try:
        # erase the vault (deleted, then swept out of every store) and revoke
        # the finance group's access to the budget; both calls return first
        assert client.delete(f"/v1/sources/{ids['vault.md']}", headers=headers).status_code == 202
        purge_deleted(replicated.catalog, replicated.indexes(), replicated.blobs, tenant)
        revoked = client.put(
            f"/v1/sources/{ids['budget.md']}/subjects",
            json={"subjects": ["group:board"]},
            headers=headers,
        )
        assert revoked.status_code == 200, revoked.text

        # the replica still holds both, live and readable by group:finance ...
        stale = _on_standby(
            standby,
            f"SELECT chunk_id, source_id FROM {_table(replicated)} WHERE tenant_id = %s AND live "
            "AND groundwork_readable(subjects, %s) AND source_id = ANY(%s)",
            tenant,
            ["group:finance"],
            [ids["vault.md"], ids["budget.md"]],
        )
        assert {s for _, s in stale} == {ids["vault.md"], ids["budget.md"]}
        # ... and even handed to the primary's result-time re-check, those rows
        # would be dropped (the second wall under the generation check)
        scope = AccessScope(tenant, (f"tenant:{tenant}", "group:finance"))
        assert replicated.catalog.load_chunks(scope, [c for c, _ in stale]) == {}

        behind = use.behind
        for name, query in queries.items():
            for mode in ("vector", "hybrid"):
                found = _search(client, headers, query, mode)
                assert ids[name] not in {h["source_id"] for h in found["hits"]}, (name, mode)
        assert use.behind == behind + 2 * len(queries)
        # the rest of the tenant is still served (from the primary)
        assert ids["harbour.md"] in {
            h["source_id"] for h in _search(client, headers, FERRY_QUERY)["hits"]
        }
    finally:
        standby.resume_replay()
    standby.wait_for_replay()
    served = use.served
    for name, query in queries.items():
        assert ids[name] not in {h["source_id"] for h in _search(client, headers, query)["hits"]}
    assert use.served == served + len(queries)


def _with_a_silent_replica(
    settings: GroundworkSettings, engines: EngineEndpoints, index_prefix: str, nowhere: Path
) -> Platform:
    """The test platform with a replica URL naming a socket directory no server
    listens in (`nowhere`), given up on after half a second."""
    lost = connect(
        replace(
            settings,
            database_replica_url=f"postgresql://postgres@/postgres?host={nowhere}&port=5999",
        ),
        engines,
        database=TEST_DATABASE,
        index_prefix=index_prefix,
    )
    assert lost.replica is not None
    lost.replica.checkout_seconds = 0.5
    return lost


def test_a_replica_that_does_not_answer_leaves_the_primary_answering(
    settings: GroundworkSettings,
    engines: EngineEndpoints,
    index_prefix: str,
    platform: Platform,
    tmp_path: Path,
) -> None:
    lost = _with_a_silent_replica(settings, engines, index_prefix, tmp_path)
    try:
        assert lost.replica is not None
        tenant, headers = _tenant(platform)
        _publish(platform, tenant, {"harbour.md": (DOCS["harbour.md"], [f"tenant:{tenant}"])})
        client = TestClient(create_app(lambda: lost), raise_server_exceptions=False)
        for _ in range(3):
            found = _search(client, headers, FERRY_QUERY)
            assert found["outcome"] == "found" and "AURORA-7" in found["hits"][0]["untrusted_text"]
        # one failure, then the replica is left alone for its retry interval
        assert _counts(lost.replica.use) == (0, 0, 1)
    finally:
        lost.close()


def test_health_reports_the_replica_its_lag_and_a_paused_replay_as_degraded(
    standby: EmbeddedStandby, replicated: Platform
) -> None:
    client = TestClient(create_app(lambda: replicated))
    standby.wait_for_replay()
    caught_up = client.get("/v1/health")
    assert caught_up.status_code == 200, caught_up.text
    assert caught_up.json()["status"] == "ok"
    replica = caught_up.json()["replica"]
    assert replica["state"] == "ok" and replica["in_recovery"] is True
    # (the primary may write a little WAL of its own meanwhile: a checkpoint)
    assert replica["replay_paused"] is False and replica["lag_bytes"] >= 0

    standby.pause_replay()
    try:
        # a change the replica has not replayed: lag in bytes, and a paused replay
        _tenant(replicated)
        lagging = client.get("/v1/health")
        # degraded, not down: the primary answers every search meanwhile
        assert lagging.status_code == 200, lagging.text
        body = lagging.json()
        assert body["status"] == "degraded" and body["engines"]["postgresql"] == "ok"
        assert body["replica"]["state"] == "lagging"
        assert body["replica"]["replay_paused"] is True and body["replica"]["lag_bytes"] > 0
    finally:
        standby.resume_replay()
    standby.wait_for_replay()
    assert client.get("/v1/health").json()["replica"]["state"] == "ok"


def test_health_reports_a_replica_that_does_not_answer_as_degraded_not_down(
    settings: GroundworkSettings,
    engines: EngineEndpoints,
    index_prefix: str,
    tmp_path: Path,
) -> None:
    lost = _with_a_silent_replica(settings, engines, index_prefix, tmp_path)
    try:
        assert lost.replica is not None
        response = TestClient(create_app(lambda: lost)).get("/v1/health")
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["status"] == "degraded"
        assert body["engines"] == {"postgresql": "ok", "keyword_index": "ok"}
        assert body["replica"]["state"].startswith("unavailable")
    finally:
        lost.close()
