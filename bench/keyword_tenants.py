"""How many tenants one OpenSearch node holds: one keyword index per tenant.

    uv run python bench/keyword_tenants.py [--tenants 1200] [--docs 20]

Creates the tenants' indexes through the adapter (a few documents each, so
every index has a segment), on the node `ensure_engines` runs, under an index
prefix of its own (dropped at the end), and prints every 200 tenants: the
node's shard count, JVM heap used and the time to create an index, then what
stops it. The embedded node runs with a 512 MiB heap and OpenSearch's default
`cluster.max_shards_per_node` (1,000), each tenant index one primary shard.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from groundwork.errors import GroundworkError  # noqa: E402
from resources.opensearch.keyword_index import OpenSearchKeywordIndex  # noqa: E402
from resources.platform import connect, ensure_engines  # noqa: E402
from resources.settings import GroundworkSettings  # noqa: E402
from tests.conformance.fixtures import chunk  # noqa: E402

PREFIX = "gwtenants"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=1200)
    parser.add_argument("--docs", type=int, default=20)
    args = parser.parse_args()
    settings = GroundworkSettings.from_env()
    platform = connect(settings, ensure_engines(settings), index_prefix=PREFIX)
    keywords = platform.keywords
    assert isinstance(keywords, OpenSearchKeywordIndex)
    client = keywords.client
    try:
        started = time.perf_counter()
        for n in range(args.tenants):
            tenant = f"kt{n:05d}"
            try:
                keywords.upsert(
                    [
                        chunk(tenant, f"document {d} of tenant {n} about replica lag and quotas")
                        for d in range(args.docs)
                    ]
                )
            except GroundworkError as exc:
                shards = client.cluster.health()["active_shards"]
                print(f"tenant {n + 1} refused at {shards} shards: {str(exc)[:300]}")
                break
            if (n + 1) % 200 == 0:
                health = client.cluster.health()
                heap = client.nodes.stats(metric="jvm")["nodes"]
                used = max(s["jvm"]["mem"]["heap_used_in_bytes"] for s in heap.values())
                took = (time.perf_counter() - started) / 200
                started = time.perf_counter()
                print(
                    f"{n + 1:5d} tenants: {health['active_shards']} shards, heap used "
                    f"{used / 2**20:.0f} MiB, {1000 * took:.0f} ms per tenant index"
                )
    finally:
        # one wildcard request: deleting ~1,000 indexes one by one meets the same
        # circuit breaker that stopped the loop
        client.indices.delete(index=f"{PREFIX}-t-*", ignore_unavailable=True)
        keywords.drop()
        platform.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
