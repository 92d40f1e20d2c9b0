"""How many tenants an OpenSearch node takes, and what happens at the limit.

One keyword index per tenant means one shard per tenant (one more per
replica); a node refuses shards beyond cluster.max_shards_per_node. These
tests run on the session's node and a prefix of their own. The last is the
client's side of capacity: its connections under concurrent searches."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from groundwork.errors import CapacityExhausted
from groundwork.ports import AccessScope
from resources.composition.platform import EngineEndpoints
from resources.composition.settings import GroundworkSettings
from resources.engines.opensearch import shard_limit_for_heap
from resources.opensearch.keyword_index import OpenSearchKeywordIndex, client_for
from testbed.index_records import chunk


@pytest.fixture
def keywords(engines: EngineEndpoints) -> Iterator[OpenSearchKeywordIndex]:
    if engines.opensearch_url is None:
        pytest.skip("the Postgres keyword backend is configured")
    index = OpenSearchKeywordIndex(
        client_for(engines.opensearch_url), f"gwtest-cap-{uuid.uuid4().hex[:6]}"
    )
    index.ensure_schema()
    yield index
    index.drop()


def test_a_full_node_refuses_a_new_tenant_by_name_with_its_limit(
    keywords: OpenSearchKeywordIndex,
) -> None:
    """At the shard limit the next tenant's first write raises CapacityExhausted
    naming the limit and the remedies; tenants already there keep working."""
    client = keywords.client
    present = f"cap-{uuid.uuid4().hex[:8]}"
    keywords.upsert([chunk(present, "capacity planning notes", chunk_id="ch-present")])
    keywords.set_versions_live(present, ["ver-1"], True)
    open_shards = int(client.cluster.health()["active_shards"])
    client.cluster.put_settings(body={"transient": {"cluster.max_shards_per_node": open_shards}})
    try:
        newcomer = f"cap-{uuid.uuid4().hex[:8]}"
        with pytest.raises(CapacityExhausted) as refused:
            keywords.upsert([chunk(newcomer, "one tenant too many")])
        assert refused.value.limit == open_shards
        message = str(refused.value)
        assert newcomer in message and f"of its {open_shards} shards" in message
        assert "Add a node" in message and "GROUNDWORK_OPENSEARCH_HEAP" in message
        # nothing half-made for the refused tenant; the others still answer
        assert not client.indices.exists(index=keywords.index_for(newcomer))
        hits = keywords.search(AccessScope(present, ("team:a",)), "capacity", 5)
        assert [h.chunk_id for h in hits] == ["ch-present"]
    finally:
        client.cluster.put_settings(body={"transient": {"cluster.max_shards_per_node": None}})


def test_the_embedded_node_takes_as_many_shards_as_its_heap_holds(
    settings: GroundworkSettings, engines: EngineEndpoints
) -> None:
    if engines.opensearch is None:
        pytest.skip("an external OpenSearch is configured")
    client = client_for(engines.opensearch.url)
    nodes = client.nodes.info(metric="settings")["nodes"]
    limits = {n["settings"]["cluster"]["max_shards_per_node"] for n in nodes.values()}
    assert limits == {str(shard_limit_for_heap(settings.opensearch_heap))}


def test_shard_limit_follows_the_heap() -> None:
    assert shard_limit_for_heap("512m") < shard_limit_for_heap("1g") < shard_limit_for_heap("2g")
    assert shard_limit_for_heap("1g") == shard_limit_for_heap("1024m")
    with pytest.raises(ValueError):
        shard_limit_for_heap("lots")


def test_schema_updates_reach_many_tenants_by_pattern(keywords: OpenSearchKeywordIndex) -> None:
    """ensure_schema runs at every connect; with the tenants' index names
    joined into one request line (4 KiB at most) it failed past ~130 tenants."""
    long_names = [f"{n:02d}-{'x' * 200}" for n in range(24)]  # 24 x ~220 chars > 4 KiB
    for tenant in long_names:
        keywords.upsert([chunk(tenant, "schema update reaches every tenant")])
    # another replica setting: the schema changed, so it goes to every index
    # (raised StoreError, too_long_http_line_exception, before)
    OpenSearchKeywordIndex(keywords.client, keywords.prefix, replicas=0).ensure_schema()
    found = keywords.client.indices.get_settings(index=keywords.pattern)
    assert len(found) == len(long_names)
    assert {s["settings"]["index"]["auto_expand_replicas"] for s in found.values()} == {"false"}


def test_an_unchanged_schema_leaves_the_tenant_indexes_alone(
    keywords: OpenSearchKeywordIndex,
) -> None:
    """A connect with the schema the template already records sends nothing
    to the tenant indexes (one template read, not a pass over every index)."""
    tenant = f"same-{uuid.uuid4().hex[:8]}"
    keywords.upsert([chunk(tenant, "unchanged schema")])
    index = keywords.index_for(tenant)
    keywords.client.indices.put_settings(
        index=index, body={"index": {"auto_expand_replicas": False, "number_of_replicas": 0}}
    )
    keywords.ensure_schema()
    found = keywords.client.indices.get_settings(index=index)[index]["settings"]["index"]
    assert found["auto_expand_replicas"] == "false"


def test_replicas_auto_expand_on_one_node_and_a_fixed_count_reaches_existing_tenants(
    keywords: OpenSearchKeywordIndex,
) -> None:
    tenant = f"rep-{uuid.uuid4().hex[:8]}"
    keywords.upsert([chunk(tenant, "replica settings")])
    index = keywords.index_for(tenant)
    found = keywords.client.indices.get_settings(index=index)[index]["settings"]["index"]
    assert found["auto_expand_replicas"] == "0-1" and found["number_of_replicas"] == "0"
    assert keywords.client.cluster.health(index=index)["status"] == "green"

    fixed = OpenSearchKeywordIndex(keywords.client, keywords.prefix, replicas=2)
    fixed.ensure_schema()
    found = keywords.client.indices.get_settings(index=index)[index]["settings"]["index"]
    assert found["auto_expand_replicas"] == "false" and found["number_of_replicas"] == "2"
    keywords.ensure_schema()  # back to auto, as the configuration now says
    found = keywords.client.indices.get_settings(index=index)[index]["settings"]["index"]
    assert found["auto_expand_replicas"] == "0-1"


def test_eight_concurrent_searches_keep_their_connections(
    keywords: OpenSearchKeywordIndex,
) -> None:
    """urllib3 keeps one connection per host unless told otherwise: every
    search beyond the first in flight opened a TCP connection and closed it on
    return. Under bench/search_load.py at 8 clients that was 1,150 connections
    opened and closed in 20 s for 2,149 searches (counted with `ss`)."""
    tenant = f"conn-{uuid.uuid4().hex[:8]}"
    keywords.upsert([chunk(tenant, "connection reuse under load", chunk_id="ch-reuse")])
    keywords.set_versions_live(tenant, ["ver-1"], True)
    scope = AccessScope(tenant, ("team:a",))
    together = threading.Barrier(8)

    def one(_: int) -> list[str]:
        together.wait()  # eight searches in flight at once, 50 rounds
        return [h.chunk_id for h in keywords.search(scope, "connection reuse", 5)]

    with ThreadPoolExecutor(8) as threads:
        assert set(map(tuple, threads.map(one, range(400)))) == {("ch-reuse",)}
    (connection,) = keywords.client.transport.connection_pool.connections
    opened = connection.pool.num_connections
    # eight in flight need at most eight; one kept per host was 339 of 400
    assert opened <= 8, f"{opened} connections opened for 400 searches at 8 in flight"
