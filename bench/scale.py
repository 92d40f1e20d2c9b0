"""Index tier at scale: tenant-filtered vector recall and latency per tenant size.

    uv run python bench/scale.py                       # ~200k chunks, ~200 tenants
    uv run python bench/scale.py --chunks 1000000 --tenants 1000
    uv run python bench/scale.py --skip-load            # measure the loaded database again

Builds a corpus into its own database (`groundwork_scale`) through the
adapters' bulk paths (`PgVectorIndex.upsert`, then `set_versions_live` per
tenant), then measures, per tenant size class (small < 500 chunks, medium
500-5k, large > 5k):

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

The keyword index is not loaded (this tier measures the vector leg only), so
the bench runs with the Postgres keyword backend and never starts OpenSearch.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from psycopg import sql  # noqa: E402

from groundwork.ports import AccessScope, IndexedChunk, VectorRecord  # noqa: E402
from resources.platform import Platform, connect, ensure_engines  # noqa: E402
from resources.settings import GroundworkSettings  # noqa: E402

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
    """The same filtered query with index scans off: a sequential or bitmap scan and a sort."""
    statement = sql.SQL(
        "SELECT chunk_id FROM {} WHERE tenant_id = %s AND live "
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
        "SELECT chunk_id, embedding FROM {} WHERE tenant_id = %s AND live "
        "AND groundwork_readable(subjects, %s)"
    ).format(sql.Identifier(f"embeddings_{model_key}"))
    with platform.pool.connection() as conn:
        rows = conn.execute(statement, (tenant, list(subjects))).fetchall()
    ids = [r[0] for r in rows]
    matrix = np.asarray([r[1].to_numpy() for r in rows], dtype=np.float32)
    similarity = matrix @ query / np.linalg.norm(matrix, axis=1) / np.linalg.norm(query)
    return [ids[i] for i in np.argsort(-similarity, kind="stable")[:K]]


def live_sizes(platform: Platform, model_key: str) -> dict[str, int]:
    statement = sql.SQL("SELECT tenant_id, count(*) FROM {} WHERE live GROUP BY 1").format(
        sql.Identifier(f"embeddings_{model_key}")
    )
    with platform.pool.connection() as conn:
        return {r[0]: int(r[1]) for r in conn.execute(statement).fetchall()}


def measure(
    platform: Platform, model_key: str, queries: np.ndarray, args: argparse.Namespace
) -> dict[str, dict[str, float]]:
    sizes = live_sizes(platform, model_key)
    rng = random.Random(args.seed + 1)
    by_class: dict[str, list[str]] = {name: [] for name, _, _ in CLASSES}
    for tenant, size in sorted(sizes.items()):
        by_class[size_class(size)].append(tenant)
    subjects = ("team:a",)
    results: dict[str, dict[str, float]] = {}
    for name, _, _ in CLASSES:
        tenants = by_class[name]
        sample = rng.sample(tenants, min(args.tenants_per_class, len(tenants)))
        recalls: list[float] = []
        latencies: list[float] = []
        short = 0
        for position, tenant in enumerate(sample):
            tenant_start = len(recalls)
            index = platform.for_tenant(tenant).vector_index(model_key)
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
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--database", default=DATABASE, help="one database per corpus size")
    args = parser.parse_args()

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
    results = measure(platform, model_key, queries, args)
    print_table(results)
    platform.close()


if __name__ == "__main__":
    main()
