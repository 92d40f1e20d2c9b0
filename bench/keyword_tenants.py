"""How many tenants one OpenSearch node holds: one keyword index per tenant.

    uv run python bench/keyword_tenants.py [--tenants 1500] [--docs 20]
        [--heap 1g] [--shard-limit N] [--gc serial|g1] [--port P --transport-port T]

Starts a node of its own (the embedded launcher, in a scratch home under
GROUNDWORK_HOME, on the ports given: default GROUNDWORK_OPENSEARCH_PORT + 8),
with `cluster.max_shards_per_node` set to --shard-limit (default: what the
embedded node is given for that heap, `shard_limit_for_heap`), and creates tenants
through the adapter: each tenant's index gets --docs documents, published
(refreshed and made live, so every index has a segment) and searched once.
At 200, 500, 1000, 1500, 2000 (then every 500) tenant indexes it prints the
shard count, JVM heap used as sampled and after a full GC (`jcmd GC.run`: the
heap the indexes really hold), the process RSS, the average time to create
and publish a tenant over the step, search p50/p95 over random tenants, the
cluster state's size and parent circuit-breaker trips; then what stops it,
if anything (the adapter's typed error). The node is stopped and its home
removed at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.engines import scratch_home  # noqa: E402
from groundwork.errors import GroundworkError  # noqa: E402
from groundwork.ports import AccessScope  # noqa: E402
from resources.composition.settings import PROJECT_ROOT, GroundworkSettings  # noqa: E402
from resources.engines.opensearch import (  # noqa: E402
    G1_GC,
    SERIAL_GC,
    EmbeddedOpenSearch,
    shard_limit_for_heap,
)
from resources.opensearch.keyword_index import OpenSearchKeywordIndex, client_for  # noqa: E402
from testbed.index_records import chunk  # noqa: E402

PREFIX = "gwtenants"
CHECKPOINTS = (200, 500, 1000, 1500, 2000)


def is_checkpoint(n: int) -> bool:
    return n in CHECKPOINTS or (n > CHECKPOINTS[-1] and n % 500 == 0)


def heap_after_full_gc(node: EmbeddedOpenSearch, keywords: OpenSearchKeywordIndex) -> float:
    """MiB of heap still used right after a full collection (what the indexes
    hold, not garbage waiting for the next GC); NaN without jcmd."""
    pid = node.pid_file.read_text().strip()
    try:
        subprocess.run(["jcmd", pid, "GC.run"], check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return float("nan")
    # the node samples its JVM stats at most once a second (monitor.jvm.refresh_interval)
    time.sleep(1.5)
    return heap_used(keywords)


def heap_used(keywords: OpenSearchKeywordIndex) -> float:
    nodes = keywords.client.nodes.stats(metric="jvm")["nodes"]
    return max(s["jvm"]["mem"]["heap_used_in_bytes"] for s in nodes.values()) / 2**20


def rss_mib(node: EmbeddedOpenSearch) -> float:
    pid = node.pid_file.read_text().strip()
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def search_latencies(
    keywords: OpenSearchKeywordIndex, tenants: int, rounds: int = 50
) -> list[float]:
    out = []
    for _ in range(rounds):
        tenant = f"kt{random.randrange(tenants):05d}"
        started = time.perf_counter()
        hits = keywords.search(AccessScope(tenant, ("team:a",)), "replica quotas", 5)
        out.append(1000 * (time.perf_counter() - started))
        assert hits, f"tenant {tenant} found nothing"
    return out


def print_row(
    node: EmbeddedOpenSearch, keywords: OpenSearchKeywordIndex, tenants: int, took: float
) -> None:
    client = keywords.client
    health = client.cluster.health()
    used = heap_used(keywords)
    after_gc = heap_after_full_gc(node, keywords)
    latencies = sorted(search_latencies(keywords, tenants))
    state = len(json.dumps(client.cluster.state(metric="metadata")))
    breakers = client.nodes.stats(metric="breaker")["nodes"]
    trips = sum(s["breakers"]["parent"]["tripped"] for s in breakers.values())
    print(
        f"{tenants:7d} {health['active_shards']:6d} {used:9.0f} {after_gc:13.0f} "
        f"{rss_mib(node):7.0f} {1000 * took:13.0f} {statistics.median(latencies):10.1f} "
        f"{latencies[int(0.95 * len(latencies))]:10.1f} {state / 1024:9.0f} "
        f"{trips:13d} {health['status']}",
        flush=True,
    )


def parse_args(settings: GroundworkSettings) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tenants", type=int, default=1500)
    parser.add_argument("--docs", type=int, default=20)
    parser.add_argument("--heap", default=settings.opensearch_heap)
    parser.add_argument(
        "--shard-limit", type=int, default=None, help="default: what the heap holds, as configured"
    )
    parser.add_argument("--port", type=int, default=settings.opensearch_http_port + 8)
    parser.add_argument(
        "--transport-port", type=int, default=settings.opensearch_transport_port + 8
    )
    parser.add_argument("--gc", choices=("serial", "g1"), default="serial")
    args = parser.parse_args()
    if args.shard_limit is None:
        args.shard_limit = shard_limit_for_heap(args.heap)
    return args


def start_node(home: Path, args: argparse.Namespace) -> EmbeddedOpenSearch:
    """A node of the bench's own in a scratch home, with the shard limit asked for."""
    node = EmbeddedOpenSearch(
        home,
        PROJECT_ROOT / "engines" / "opensearch",
        args.port,
        args.transport_port,
        args.heap,
        node_settings={"cluster.max_shards_per_node": str(args.shard_limit)},
        gc_options=SERIAL_GC if args.gc == "serial" else G1_GC,
    )
    node.start()
    return node


def print_refusal(
    node: EmbeddedOpenSearch, keywords: OpenSearchKeywordIndex, n: int, took: float, exc: Exception
) -> None:
    """The figures at the limit (or wherever it stopped), then the refusal; a
    node out of heap may refuse those requests too."""
    try:
        print_row(node, keywords, n, took)
    except Exception as unavailable:  # noqa: BLE001 - report and go on to the refusal
        print(f"no figures at {n} tenants: {str(unavailable)[:200]}")
    shards = keywords.client.cluster.health()["active_shards"]
    print(f"tenant {n + 1} refused at {shards} shards: {type(exc).__name__}: {str(exc)[:600]}")


def fill_tenants(
    node: EmbeddedOpenSearch, keywords: OpenSearchKeywordIndex, tenants: int, docs: int
) -> None:
    """Tenant after tenant, each index filled and published, a row printed at
    each checkpoint, until `tenants` or the first refusal."""
    started = time.perf_counter()
    since = 0
    for n in range(tenants):
        tenant = f"kt{n:05d}"
        try:
            keywords.upsert(
                [
                    chunk(tenant, f"document {d} of tenant {n} about replica lag and quotas")
                    for d in range(docs)
                ]
            )
            keywords.set_versions_live(tenant, ["ver-1"], True)
        except GroundworkError as exc:
            print_refusal(
                node, keywords, n, (time.perf_counter() - started) / max(1, n - since), exc
            )
            break
        if is_checkpoint(n + 1):
            print_row(node, keywords, n + 1, (time.perf_counter() - started) / (n + 1 - since))
            started = time.perf_counter()
            since = n + 1


def print_ensure_schema(keywords: OpenSearchKeywordIndex) -> None:
    """Every process that connects runs ensure_schema: one template read when
    the schema is unchanged, a pass over every tenant index when it changed."""
    client = keywords.client
    shards = client.cluster.health()["active_shards"]
    started = time.perf_counter()
    keywords.ensure_schema()
    unchanged = time.perf_counter() - started
    started = time.perf_counter()
    OpenSearchKeywordIndex(client, PREFIX, replicas=0).ensure_schema()
    changed = time.perf_counter() - started
    print(
        f"ensure_schema over {shards} tenant indexes: {unchanged:.2f} s unchanged, "
        f"{changed:.2f} s with a changed replica setting"
    )


def main() -> int:
    settings = GroundworkSettings.from_env()
    args = parse_args(settings)
    with scratch_home(settings.home / "bench-keyword-tenants") as home:
        node = start_node(home, args)
        keywords = OpenSearchKeywordIndex(client_for(node.url), PREFIX)
        keywords.ensure_schema()
        print(
            f"one node, heap {args.heap} ({args.gc} GC), cluster.max_shards_per_node {args.shard_limit}, "
            f"{args.docs} documents per tenant; at start heap after GC "
            f"{heap_after_full_gc(node, keywords):.0f} MiB"
        )
        print(
            "tenants shards heap_used heap_after_gc rss_MiB ms_per_tenant search_p50 search_p95 "
            "state_KiB breaker_trips status"
        )
        try:
            fill_tenants(node, keywords, args.tenants, args.docs)
            print_ensure_schema(keywords)
        finally:
            node.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
