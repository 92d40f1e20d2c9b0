"""What reading the shared system corpus costs the vector leg (issue #35).

    GROUNDWORK_HOME=.groundwork-test uv run python bench/system_corpus.py
    uv run python bench/system_corpus.py --small 1500 --large 12000 --system 6000 --queries 300

Loads random unit vectors (the adapter's bulk path, `PgVectorIndex.upsert`,
then `set_versions_live` and `refresh_tenant_graphs`) into a database of its
own (`groundwork_bench_system`): a small tenant (searched exactly), a large
one (its own HNSW graph) and the system tenant (its own graph once it is past
the exact line). Then, through each tenant's walled view (row-level security
on, as the API searches), the wall time of `PgVectorIndex.search` for 10 hits:

- own: the tenant's own rows only (a tenant that turned the system corpus off);
- own+system: its rows and the system corpus's (one nearest-neighbour arm per
  owner, UNION ALL);
- own, no policy: the same search with migration 0031's read policy dropped
  from the vector table, i.e. what every search cost before it (the policy is
  OR'ed into every walled read of the table, its own tenant's too).

Prints p50 and p95 in ms per tenant and mode. Nothing here touches another
database; rerun with --skip-load to measure the loaded one again.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import numpy as np
import psycopg

from groundwork.ports import SYSTEM_TENANT, AccessScope, IndexedChunk, SystemReading, VectorRecord
from resources.composition.platform import Platform, connect
from resources.composition.settings import GroundworkSettings
from resources.postgres.vector_index import PgVectorIndex

DATABASE = "groundwork_bench_system"
SUBJECTS = ("team:a",)


def _load(platform: Platform, tenant: str, rows: int, rng: np.random.Generator) -> None:
    model = platform.settings.default_model_key
    platform.catalog.ensure_tenant(tenant, tenant, model)
    index = platform.vector_index(model)
    subjects = ("tenant:system",) if tenant == SYSTEM_TENANT else SUBJECTS
    version = f"ver_{tenant}"
    vectors = rng.standard_normal((rows, platform.model(model).dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for start in range(0, rows, 2000):
        index.upsert(
            [
                VectorRecord(
                    IndexedChunk(
                        chunk_id=f"ch_{tenant}_{n}",
                        tenant_id=tenant,
                        source_id=f"src_{tenant}_{n // 20}",
                        version_id=version,
                        subjects=subjects,
                        media_type="text/markdown",
                        title="",
                        content="",
                        content_hash=uuid.uuid4().hex,
                    ),
                    tuple(float(x) for x in vectors[n]),
                )
                for n in range(start, min(start + 2000, rows))
            ]
        )
    index.set_versions_live(tenant, [version], True)


def _timed(index: PgVectorIndex, scope: AccessScope, queries: np.ndarray) -> tuple[float, float]:
    took = []
    for query in queries:
        started = time.perf_counter()
        index.search(scope, query.tolist(), 10)
        took.append((time.perf_counter() - started) * 1000)
    took.sort()
    return statistics.median(took), took[int(len(took) * 0.95)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", type=int, default=1500)
    parser.add_argument("--large", type=int, default=12000)
    parser.add_argument("--system", type=int, default=6000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--skip-load", action="store_true")
    args = parser.parse_args()
    settings = GroundworkSettings.from_env()
    platform = connect(settings, database=DATABASE, index_prefix="gwbench-system")
    model = settings.default_model_key
    tenants = {"bench-small": args.small, "bench-large": args.large, SYSTEM_TENANT: args.system}
    rng = np.random.default_rng(7)
    if not args.skip_load:
        for tenant, rows in tenants.items():
            _load(platform, tenant, rows, rng)
        index = platform.vector_index(model)
        assert isinstance(index, PgVectorIndex)
        print("graphs:", index.refresh_tenant_graphs(list(tenants)))
    dimension = platform.model(model).dimension
    queries = rng.standard_normal((args.queries, dimension)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    table = f"embeddings_{model}"
    system = SystemReading(SYSTEM_TENANT, ("tenant:system", *SUBJECTS))
    print(f"{'tenant':<12} {'rows':>6} {'mode':<16} {'p50 ms':>7} {'p95 ms':>7}")
    for tenant in ("bench-small", "bench-large"):
        walled = platform.for_tenant(tenant).vector_index(model)
        assert isinstance(walled, PgVectorIndex)
        own = AccessScope(tenant, SUBJECTS)
        both = AccessScope(tenant, SUBJECTS, system)
        assert {h.chunk_id.split("_")[1] for h in walled.search(both, queries[0].tolist(), 50)} >= {
            SYSTEM_TENANT
        }
        _timed(walled, own, queries[:20])  # warm the connections and caches
        rows = tenants[tenant]
        for mode, scope in (("own", own), ("own+system", both)):
            p50, p95 = _timed(walled, scope, queries)
            print(f"{tenant:<12} {rows:>6} {mode:<16} {p50:>7.2f} {p95:>7.2f}")
        with psycopg.connect(platform.database_url, autocommit=True) as conn:
            conn.execute(f"DROP POLICY system_corpus_read ON {table}")
        try:
            p50, p95 = _timed(walled, own, queries)
            print(f"{tenant:<12} {rows:>6} {'own, no policy':<16} {p50:>7.2f} {p95:>7.2f}")
        finally:
            with psycopg.connect(platform.database_url, autocommit=True) as conn:
                conn.execute("SELECT groundwork_system_readable(%s)", (table,))
    platform.close()


if __name__ == "__main__":
    main()
