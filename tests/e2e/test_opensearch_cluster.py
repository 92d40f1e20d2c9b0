"""A real two-node OpenSearch cluster loses a data node under search load.

Both nodes are the project's launcher (engines/opensearch), started as one
cluster on ports the system hands out. The adapter is built as
the platform builds it from GROUNDWORK_OPENSEARCH_URL naming both nodes.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import uuid
from collections.abc import Iterator

import pytest

from groundwork.services.health import KeywordClusterState
from resources.composition.settings import PROJECT_ROOT, GroundworkSettings
from resources.engines.opensearch import EmbeddedOpenSearchCluster
from resources.opensearch.keyword_index import (
    SEARCH_TIMEOUT_SECONDS,
    OpenSearchKeywordIndex,
    client_for,
)
from testbed.cluster_failover import index_tenants, lose_a_node

#: a search may fail only this long after the kill (measured: see the report)
FAILOVER_BOUND_SECONDS = 10.0


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now, all distinct (held open together while chosen)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


@pytest.fixture(scope="module")
def cluster(settings: GroundworkSettings) -> Iterator[EmbeddedOpenSearchCluster]:
    """Fresh every run, on ports the system hands out (the ports after this
    checkout's node could be another checkout's), and stopped after the module
    whatever GROUNDWORK_KEEP_ENGINES says."""
    home = settings.home / "opensearch-cluster"
    shutil.rmtree(home, ignore_errors=True)
    ports = free_ports(4)
    cluster = EmbeddedOpenSearchCluster(
        home,
        PROJECT_ROOT / "engines" / "opensearch",
        http_ports=ports[:2],
        transport_ports=ports[2:],
        heap="384m",
    )
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(home, ignore_errors=True)


def test_a_killed_data_node_costs_no_search_after_failover_and_no_document(
    cluster: EmbeddedOpenSearchCluster,
) -> None:
    keywords = OpenSearchKeywordIndex(client_for(cluster.url), f"gwtest-{uuid.uuid4().hex[:6]}")
    keywords.ensure_schema()
    tenants = [f"fo-{n}-{uuid.uuid4().hex[:6]}" for n in range(6)]
    before = index_tenants(keywords, tenants, documents=40)
    assert all(count > 0 for count in before.values())
    cluster.wait_for_status("green")
    # one replica each: every tenant's documents are on both nodes
    shards = keywords.client.cat.shards(index=keywords.pattern, format="json")
    for tenant in tenants:
        copies = [s for s in shards if s["index"] == keywords.index_for(tenant)]
        assert sorted(s["prirep"] for s in copies) == ["p", "r"]
        assert {s["state"] for s in copies} == {"STARTED"}
        assert len({s["node"] for s in copies}) == 2
    # what /v1/health reports of the keyword cluster
    assert keywords.cluster_state() == KeywordClusterState("green", 2, 2, 0)

    outcome = lose_a_node(cluster, keywords, tenants, kill_manager=False, down_seconds=10.0)

    assert not outcome.victim_was_manager
    # searches kept answering from the other node while the victim was down ...
    down_from = outcome.killed_at + outcome.failover_window
    assert outcome.answered_between(down_from, outcome.restarted_at) > 50
    # ... a bounded window after the kill, then none failed: not while the
    # node was down, not while it rejoined and its replicas recovered
    assert outcome.failover_window <= FAILOVER_BOUND_SECONDS, outcome.errors
    assert outcome.failed_after_window == 0
    assert outcome.answered_between(outcome.green_at, float("inf")) > 0
    # no document lost, and the replicas are back on the restarted node
    assert outcome.counts_after == outcome.counts_before == before
    shards = keywords.client.cat.shards(index=keywords.pattern, format="json")
    assert len(shards) == 2 * len(tenants)
    assert {s["state"] for s in shards} == {"STARTED"}
    keywords.drop()


def test_a_hung_node_costs_searches_a_timeout_not_the_whole_hang(
    cluster: EmbeddedOpenSearchCluster,
) -> None:
    """SIGSTOP keeps the node's sockets open: only the search timeout notices it.
    With the client's 30 s, every client waited out the whole hang on the hung
    node (8 clients, 8 searches answered in a 20 s hang, measured)."""
    keywords = OpenSearchKeywordIndex(client_for(cluster.url), f"gwtest-{uuid.uuid4().hex[:6]}")
    keywords.ensure_schema()
    tenants = [f"hang-{n}-{uuid.uuid4().hex[:6]}" for n in range(4)]
    before = index_tenants(keywords, tenants, documents=20)
    outcome = lose_a_node(
        cluster, keywords, tenants, kill_manager=False, hang=True, down_seconds=20.0
    )
    slowest = outcome.slowest_between(outcome.killed_at, outcome.restarted_at)
    print(
        f"hung node: {len(outcome.failures_after_kill)} searches failed, failover window "
        f"{outcome.failover_window:.2f} s, {outcome.slower_than(SEARCH_TIMEOUT_SECONDS)} "
        f"waited past the timeout, slowest {slowest:.2f} s"
    )
    # after a timeout the silent node is left out: searches keep answering while
    # it hangs, none waits out the hang, none fails
    settled = outcome.killed_at + 2 * SEARCH_TIMEOUT_SECONDS
    assert outcome.answered_between(settled, outcome.restarted_at) > 50
    # A search sent to the hung node times out once and is answered by the other
    # node, whose own copies serve it (preference _local): one timeout, not two or
    # three. Routed by adaptive replica selection alone, the healthy coordinator
    # kept sending shard requests to the hung copy for seconds: 18-19 searches
    # waited past the timeout, the slowest 6-9 s, and 1-3 spent all three
    # attempts on timeouts and failed (a clean-clone CI run failed on it).
    assert slowest < 2 * SEARCH_TIMEOUT_SECONDS, outcome.errors
    # issue 14's goal: 0 failed searches after the measured window
    assert outcome.failed_after_window == 0, outcome.errors
    assert outcome.failover_window <= 2 * SEARCH_TIMEOUT_SECONDS, outcome.errors
    assert outcome.counts_after == outcome.counts_before == before
    keywords.drop()
