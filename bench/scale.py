"""Index tier at scale: tenant-filtered vector recall and latency per tenant size.

    uv run python bench/scale.py                       # ~200k chunks, ~200 tenants
    uv run python bench/scale.py --chunks 1000000 --tenants 1000
    uv run python bench/scale.py --skip-load            # measure the loaded database again

Full stack (`--full`, bench/scale_full.py): catalog, OpenSearch and pgvector
loaded through the pipeline's stage functions, then /v1/search over HTTP:

    uv run python bench/scale.py --full --chunks 30000 --tenants 60 --database groundwork_scale_full_30k
    uv run python bench/scale.py --full --chunks 200000 --tenants 200 --database groundwork_scale_full_200k
    # issue 14's run: ~2 h of load on 2 busy cores (200k took 30 min); rerun the same command
    # to resume an interrupted load. 1,000 tenant indexes want a node started with a 1 GiB heap
    # (at 512m with 260 shards the parent breaker tripped: 169 of 2,284 searches failed in one
    # 8-client run; 1g is main's default since oscluster) and the ensure_schema pattern fix
    # (oscluster, on main): without it no process connects past ~250 tenants.
    GROUNDWORK_OPENSEARCH_HEAP=1g uv run python bench/scale.py --full --chunks 1000000 --tenants 1000 --database groundwork_scale_full_1m
    # measure it again without loading
    uv run python bench/scale.py --full --chunks 1000000 --tenants 1000 --database groundwork_scale_full_1m --skip-load

Vector-only mode (the default) builds a corpus into its own database
(`groundwork_scale`) through the adapters' bulk paths (`PgVectorIndex.upsert`,
then `set_versions_live` per tenant), then measures, per tenant size class
(small < 500 chunks, medium 500-5k, large > 5k):

- recall@10 of `PgVectorIndex.search` (through the tenant's walled view, as
  the API calls it) under the tenant + subjects filter against exact search:
  the same query with index scans off (`SET LOCAL enable_indexscan = off`, so
  no HNSW), itself checked against a numpy brute force on a sample;
- latency p50/p95 of that search (wall time of the adapter call);
- HNSW build time (the index is dropped before the bulk load and rebuilt after
  it, as a bulk load would do), the build time of the large tenants' own graphs
  (`PgVectorIndex.refresh_tenant_graphs`), and index and table sizes.

Corpus: tenant sizes are Zipf (rank r gets ~1/r of the chunks), so a few
tenants hold tens of thousands of chunks and most hold a few hundred. Texts
recombine sentences of the shared SciFact corpus. Vectors derive from real
model vectors: `--real` SciFact passages are embedded once with the project's
embedder; every chunk is a normalised mix of two of them (from a topic set
its tenant draws) plus Gaussian noise, so neighbourhoods have the real
model's geometry and tenants overlap in topic, the hard case for a filtered
graph search. Queries are real SciFact queries embedded with `embed_query`.
85% of chunks carry subject team:a, the rest team:b; searches ask as team:a.
In vector-only mode the keyword index is not loaded (the Postgres keyword
backend, no OpenSearch) and nothing is searchable through the API.

`--full` loads the same Zipf sizes as Markdown sources of 20 chunks each
(testbed/scale_corpus.py: 1M chunks are 50k documents) tenant by tenant, largest
first, through register_file -> extract_pending (one extraction worker per
core) -> chunk_pending -> keyword_index_pending (one OpenSearch index per
tenant) -> the serving-model step (embedding_metadata, publish_and_check:
atomic publication, the stores-agree check, the tenant's own graph), printing
progress and per-stage throughput. Chunk vectors come from
testbed/topic_mix_embedder.py (the mix of the real vectors of the SciFact
documents a chunk quotes; injected into the load's copy of the platform
only); the API embeds queries with the real model. Then, per size class: the
vector leg's recall@10 as above, hybrid /v1/search p50/p95/p99 at 1 and 8
clients (wrk; each client cycles through the sampled tenants' keys, subjects
team:a, and real SciFact queries), errors, the API's RSS, PostgreSQL's and
OpenSearch's peak memory, the node's shards and heap, index sizes, and the
issue's goal line. Subjects are per source (85% team:a). When the node's
`cluster.max_shards_per_node` (1,000 by default) leaves no room for one index
per tenant, the bench raises it on its own node (transient) and says so; the
embedded node's heap is GROUNDWORK_OPENSEARCH_HEAP (512m), set before the node
starts. Index prefixes are short (gwsf-1m): `ensure_schema` named every tenant
index in one request line, refused past 4 KiB, until the pattern fix of branch
oscluster, which the 1M run needs. A load that stops keeps every tenant it
published: a rerun skips tenants whose sources are all there with no work left.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import random
import re
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np  # noqa: E402
from psycopg import sql  # noqa: E402

from groundwork.ports import AccessScope, IndexedChunk, VectorRecord  # noqa: E402
from resources.composition.platform import Platform, connect, ensure_engines  # noqa: E402
from resources.composition.settings import GroundworkSettings  # noqa: E402

DATABASE = "groundwork_scale"
PREFIX = "gwscale"
CORPUS = Path("/work/shared/data/scifact")
CHUNKS_PER_SOURCE = 20
K = 10
CLASSES = (("small", 0, 500), ("medium", 500, 5000), ("large", 5000, 10**12))


def tenant_sizes(chunks: int, tenants: int, minimum: int = 20) -> list[int]:
    """Zipf (s=1) sizes summing to about `chunks`, largest first."""
    weights = [1.0 / rank for rank in range(1, tenants + 1)]
    total = sum(weights)
    return [max(minimum, round(chunks * w / total)) for w in weights]


def size_class(size: int) -> str:
    return next(name for name, low, high in CLASSES if low <= size < high)


def sentences_and_passages(limit: int) -> tuple[list[str], list[str], list[str]]:
    """SciFact sentences (for texts), passages (to embed) and queries."""
    sentences: list[str] = []
    passages: list[str] = []
    for line in (CORPUS / "corpus.jsonl").read_text().splitlines():
        doc = json.loads(line)
        parts = [s for s in re.split(r"(?<=[.!?])\s+", doc["text"]) if len(s) > 30]
        sentences.extend(parts)
        if len(passages) < limit and parts:
            passages.append(" ".join(parts[:3]))
    queries = [
        json.loads(line)["text"] for line in (CORPUS / "queries.jsonl").read_text().splitlines()
    ]
    return sentences, passages, queries


def embed(platform: Platform, model_key: str, texts: Sequence[str]) -> np.ndarray:
    embedder = platform.embedder(model_key)
    out: list[tuple[float, ...]] = []
    for start in range(0, len(texts), 64):
        out.extend(embedder.embed_documents(list(texts[start : start + 64])))
    return np.asarray(out, dtype=np.float32)


def hnsw_indexes(platform: Platform, table: str) -> list[tuple[str, str]]:
    with platform.pool.connection() as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s "
            "AND indexdef ILIKE '%%using hnsw%%'",
            (table,),
        ).fetchall()
    return [(r[0], r[1]) for r in rows]


def load(
    platform: Platform,
    model_key: str,
    sizes: list[int],
    bases: np.ndarray,
    sentences: list[str],
    args: argparse.Namespace,
) -> dict[str, float]:
    """Bulk load through the adapter with the HNSW index dropped, then rebuild it (timed)."""
    table = f"embeddings_{model_key}"
    index = platform.vector_index(model_key)
    definitions = hnsw_indexes(platform, table)
    with platform.pool.connection() as conn:
        conn.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(table)))
        for name, _ in definitions:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
    rng = np.random.default_rng(args.seed)
    text_rng = random.Random(args.seed)
    dim = bases.shape[1]
    sigma = args.noise / np.sqrt(dim)
    started = time.perf_counter()
    loaded = 0
    for t, size in enumerate(sizes):
        tenant = f"t{t:04d}"
        topics = rng.choice(len(bases), size=min(len(bases), max(8, size // 25)), replace=False)
        versions: list[str] = []
        for batch_start in range(0, size, 2000):
            n = min(2000, size - batch_start)
            first = bases[rng.choice(topics, n)]
            second = bases[rng.choice(topics, n)]
            mixed = first + 0.35 * second + rng.normal(0.0, sigma, (n, dim)).astype(np.float32)
            mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
            records = []
            for i in range(n):
                position = batch_start + i
                source = f"{tenant}-s{position // CHUNKS_PER_SOURCE:05d}"
                version = f"{source}-v1"
                if position % CHUNKS_PER_SOURCE == 0:
                    versions.append(version)
                text = " ".join(text_rng.sample(sentences, 3))
                subjects = ("team:a",) if text_rng.random() < 0.85 else ("team:b",)
                chunk = IndexedChunk(
                    chunk_id=f"{source}-c{position % CHUNKS_PER_SOURCE:02d}",
                    tenant_id=tenant,
                    source_id=source,
                    version_id=version,
                    subjects=subjects,
                    media_type="text/plain",
                    title=source,
                    content=text,
                    content_hash=hashlib.sha256(text.encode()).hexdigest(),
                )
                records.append(VectorRecord(chunk, tuple(mixed[i].tolist())))
            loaded += index.upsert(records)
        index.set_versions_live(tenant, versions, True)
        if t % 20 == 0:
            print(f"  loaded {loaded} chunks ({t + 1}/{len(sizes)} tenants)", flush=True)
    load_seconds = time.perf_counter() - started
    build_seconds = 0.0
    with platform.pool.connection() as conn:
        conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(args.build_mem)))
        conn.execute("SET max_parallel_maintenance_workers = 1")  # two cores, shared
        for _, definition in definitions:
            started = time.perf_counter()
            conn.execute(definition)  # type: ignore[arg-type]
            build_seconds += time.perf_counter() - started
        conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
    return {"load_s": load_seconds, "build_s": build_seconds}


def sizes_report(platform: Platform, model_key: str) -> dict[str, int]:
    table = f"embeddings_{model_key}"
    with platform.pool.connection() as conn:
        rows = conn.execute(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = to_regclass(%s)",
            (table,),
        ).fetchall()
        total = conn.execute("SELECT pg_total_relation_size(to_regclass(%s))", (table,)).fetchone()
        heap = conn.execute("SELECT pg_relation_size(to_regclass(%s))", (table,)).fetchone()
    out = {str(r[0]): int(r[1]) for r in rows}
    out["(heap)"] = int(heap[0]) if heap else 0
    out["(total)"] = int(total[0]) if total else 0
    return out


def exact_top(
    platform: Platform, model_key: str, tenant: str, subjects: Sequence[str], query: np.ndarray
) -> list[str]:
    """The same filtered query with index scans off: a sequential or bitmap scan and a
    sort. Raw layer only, as a search without filters asks (a summary page's vector
    sits among its source's chunks: counting it made exact search look 0.74-0.81)."""
    statement = sql.SQL(
        "SELECT chunk_id FROM {} WHERE tenant_id = %s AND live AND layer = 'raw' "
        "AND groundwork_readable(subjects, %s) ORDER BY embedding <=> %s, chunk_id LIMIT %s"
    ).format(sql.Identifier(f"embeddings_{model_key}"))
    with platform.pool.connection() as conn:
        conn.execute("SET LOCAL enable_indexscan = off")
        rows = conn.execute(statement, (tenant, list(subjects), query, K)).fetchall()
    return [r[0] for r in rows]


def brute_force_top(
    platform: Platform, model_key: str, tenant: str, subjects: Sequence[str], query: np.ndarray
) -> list[str]:
    """numpy over every row the filter admits: the check that `exact_top` is exact."""
    statement = sql.SQL(
        "SELECT chunk_id, embedding FROM {} WHERE tenant_id = %s AND live AND layer = 'raw' "
        "AND groundwork_readable(subjects, %s)"
    ).format(sql.Identifier(f"embeddings_{model_key}"))
    with platform.pool.connection() as conn:
        rows = conn.execute(statement, (tenant, list(subjects))).fetchall()
    ids = [r[0] for r in rows]
    matrix = np.asarray([r[1].to_numpy() for r in rows], dtype=np.float32)
    similarity = matrix @ query / np.linalg.norm(matrix, axis=1) / np.linalg.norm(query)
    return [ids[i] for i in np.argsort(-similarity, kind="stable")[:K]]


def live_sizes(platform: Platform, model_key: str) -> dict[str, int]:
    # raw chunks: the corpus as loaded (each source's summary page is one row more)
    statement = sql.SQL(
        "SELECT tenant_id, count(*) FROM {} WHERE live AND layer = 'raw' GROUP BY 1"
    ).format(sql.Identifier(f"embeddings_{model_key}"))
    with platform.pool.connection() as conn:
        return {r[0]: int(r[1]) for r in conn.execute(statement).fetchall()}


def sample_tenants(sizes: dict[str, int], args: argparse.Namespace) -> dict[str, list[str]]:
    """Up to `--tenants-per-class` tenants of each size class."""
    rng = random.Random(args.seed + 1)
    by_class: dict[str, list[str]] = {name: [] for name, _, _ in CLASSES}
    for tenant, size in sorted(sizes.items()):
        by_class[size_class(size)].append(tenant)
    return {
        name: sorted(rng.sample(tenants, min(args.tenants_per_class, len(tenants))))
        for name, tenants in by_class.items()
    }


def measure(
    platform: Platform,
    model_key: str,
    queries: np.ndarray,
    args: argparse.Namespace,
    sizes: dict[str, int],
    samples: dict[str, list[str]],
    ef_search: int | None = None,
) -> dict[str, dict[str, float]]:
    """`ef_search`: the graph path's setting for this measurement (the adapter's
    own when None), to weigh recall against the vector leg's cost."""
    rng = random.Random(args.seed + 2)
    subjects = ("team:a",)
    results: dict[str, dict[str, float]] = {}
    for name, _, _ in CLASSES:
        tenants = [t for t, size in sizes.items() if size_class(size) == name]
        sample = samples[name]
        recalls: list[float] = []
        latencies: list[float] = []
        short = 0
        for position, tenant in enumerate(sample):
            tenant_start = len(recalls)
            index = platform.for_tenant(tenant).vector_index(model_key)
            if ef_search is not None:
                index.ef_search = ef_search  # type: ignore[attr-defined]
            scope = AccessScope(tenant, subjects)
            for q in rng.sample(range(len(queries)), args.queries):
                vector = queries[q]
                truth = exact_top(platform, model_key, tenant, subjects, vector)
                if position == 0 and len(recalls) < 3:
                    brute = brute_force_top(platform, model_key, tenant, subjects, vector)
                    if set(brute) != set(truth):
                        raise SystemExit(f"exact search is not exact for {tenant}: {truth} {brute}")
                started = time.perf_counter()
                hits = index.search(scope, vector.tolist(), K)
                latencies.append((time.perf_counter() - started) * 1000)
                got = {h.chunk_id for h in hits}
                short += len(hits) < len(truth)
                recalls.append(len(got & set(truth)) / len(truth) if truth else 1.0)
            if name == "large":  # few and the ones the graph serves: each on its own line
                mine = recalls[tenant_start:]
                print(
                    f"  {tenant} {sizes[tenant]:>7} live rows: recall@10 {statistics.fmean(mine):.3f}"
                )
        latencies.sort()
        results[name] = {
            "tenants": len(tenants),
            "sampled": len(sample),
            "queries": len(recalls),
            "recall_mean": statistics.fmean(recalls) if recalls else float("nan"),
            "recall_min": min(recalls) if recalls else float("nan"),
            "short": short,
            "p50_ms": latencies[len(latencies) // 2] if latencies else float("nan"),
            "p95_ms": latencies[int(len(latencies) * 0.95)] if latencies else float("nan"),
            "sizes": f"{min(sizes[t] for t in tenants)}-{max(sizes[t] for t in tenants)}"
            if tenants
            else "-",  # type: ignore[dict-item]
        }
    return results


def print_table(results: dict[str, dict[str, float]]) -> None:
    print(
        f"{'class':<8}{'tenants':>8}{'live rows':>14}{'queries':>9}{'recall@10':>11}"
        f"{'min':>7}{'short':>7}{'p50 ms':>9}{'p95 ms':>9}"
    )
    for name, r in results.items():
        print(
            f"{name:<8}{r['tenants']:>8}{r['sizes']:>14}{r['queries']:>9}"
            f"{r['recall_mean']:>11.3f}{r['recall_min']:>7.2f}{r['short']:>7}"
            f"{r['p50_ms']:>9.2f}{r['p95_ms']:>9.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=200_000)
    parser.add_argument("--tenants", type=int, default=200)
    parser.add_argument("--real", type=int, default=2000, help="real passages embedded")
    parser.add_argument("--noise", type=float, default=0.45, help="noise norm per chunk vector")
    parser.add_argument("--queries", type=int, default=10, help="queries per sampled tenant")
    parser.add_argument("--tenants-per-class", type=int, default=25)
    parser.add_argument("--build-mem", default="1500MB", help="maintenance_work_mem for the build")
    parser.add_argument("--skip-load", action="store_true", help="measure what is loaded")
    parser.add_argument(
        "--ef-search",
        default="",
        help="comma-separated hnsw.ef_search values to measure the vector leg at as well",
    )
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument(
        "--database",
        help=f"one database per corpus size (default {DATABASE}, "
        "with --full groundwork_scale_full)",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="load catalog, OpenSearch and pgvector through the pipeline stages; "
        "measure /v1/search too",
    )
    parser.add_argument("--seconds", type=int, default=20, help="--full: wrk seconds per level")
    parser.add_argument("--levels", default="1,8", help="--full: concurrent clients per wrk run")
    parser.add_argument("--load-only", action="store_true", help="--full: load, then stop")
    parser.add_argument("--api-port", type=int, default=0, help="--full: API port (0: any free)")
    args = parser.parse_args()
    if args.full:
        from bench.scale_full import run

        run(args)
        return
    args.database = args.database or DATABASE

    settings = dataclasses.replace(GroundworkSettings.from_env(), keyword_backend="postgres")
    platform = connect(
        settings, ensure_engines(settings), database=args.database, index_prefix=PREFIX
    )
    model_key = settings.default_model_key
    sentences, passages, query_texts = sentences_and_passages(args.real)
    embedder = platform.embedder(model_key)
    started = time.perf_counter()
    queries = np.asarray([embedder.embed_query(q) for q in query_texts[:200]], dtype=np.float32)
    if not args.skip_load:
        bases = embed(platform, model_key, passages)
        print(
            f"embedded {len(passages)} passages and {len(queries)} queries "
            f"in {time.perf_counter() - started:.1f} s"
        )
        sizes = tenant_sizes(args.chunks, args.tenants)
        print(f"loading {sum(sizes)} chunks over {len(sizes)} tenants (largest {sizes[0]})")
        timing = load(platform, model_key, sizes, bases, sentences, args)
        print(
            f"bulk load {timing['load_s']:.1f} s "
            f"({sum(sizes) / timing['load_s']:.0f} chunks/s); HNSW build {timing['build_s']:.1f} s"
        )
    graphs = getattr(platform.vector_index(model_key), "refresh_tenant_graphs", None)
    if graphs is not None:  # the adapter's maintenance step: large tenants' own graphs
        started = time.perf_counter()
        changes = graphs()
        print(
            f"tenant graphs: built {len(changes.created)} ({', '.join(changes.created)}), "
            f"dropped {len(changes.dropped)} in {time.perf_counter() - started:.1f} s"
        )
    for name, size in sizes_report(platform, model_key).items():
        print(f"  {name:<45} {size / 2**20:8.1f} MiB")
    sizes_now = live_sizes(platform, model_key)
    results = measure(
        platform, model_key, queries, args, sizes_now, sample_tenants(sizes_now, args)
    )
    print_table(results)
    platform.close()


if __name__ == "__main__":
    main()
