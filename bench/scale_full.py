"""`bench/scale.py --full`: the whole stack at scale, loaded by the real pipeline.

Every tenant is loaded the way a tenant's ingest run loads it, by the stage
functions the Dagster assets call, in the assets' order and with their
arguments: `register_file` per source (the API's and the inbox's
registration), `extract_pending` over one killable extraction worker per core
(assets/extraction.py), `chunk_pending` sized in the model's tokens
(assets/chunks.py), `keyword_index_pending` into the tenant's own OpenSearch
index (assets/keyword_index.py), then the serving-model step of
assets/publication.py `serving_index`: `embedding_metadata` (embed_pending)
and `publish_and_check` (atomic publication, the stores-agree check, the
tenant's own HNSW graph once it is large enough). Catalog, OpenSearch and
pgvector therefore hold what production would hold, and `/v1/search` serves
it.

The one substitution: the load's platform is a copy whose embedder is
`TopicMixEmbedder` (testbed/topic_mix_embedder.py), which gives each chunk the
mix of the real model vectors of the SciFact documents its sentences quote;
queries are embedded by the real model, in the API.

Tenants load largest first, each to publication before the next, so an
interrupted load keeps every finished tenant; a rerun skips tenants whose
sources are all there with no work left (`--skip-load` skips the load).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import numpy as np
import psutil
from psycopg import sql

from assets.embeddings import embedding_metadata
from assets.publication import STORES_AGREE, publish_and_check
from bench.scale import (
    CLASSES,
    CORPUS,
    embed,
    live_sizes,
    measure,
    print_table,
    sample_tenants,
    sizes_report,
    tenant_sizes,
)
from bench.search_load import LUA, api_rss_mib
from bench.search_profile import engine_pids
from evals.beir import load_queries
from groundwork.chunking import ChunkingPolicy
from groundwork.stages.chunks import chunk_pending
from groundwork.stages.extraction import extract_pending
from groundwork.stages.keyword_index import keyword_index_pending
from groundwork.stages.registration import register_file
from groundwork.stages.summary_layer import summarize_pending
from resources.composition.machine import available_cores
from resources.composition.platform import Platform, connect, ensure_engines
from resources.composition.settings import GroundworkSettings
from resources.engines.extraction_worker import ExtractionWorker
from resources.opensearch.keyword_index import OpenSearchKeywordIndex
from testbed.api_server import peak_rss_mib, serve_api
from testbed.scale_corpus import CHUNKS_PER_SOURCE, TopicDocuments, documents_for
from testbed.scale_corpus import load_topic_documents as load_topics
from testbed.topic_mix_embedder import TopicMixEmbedder

DATABASE = "groundwork_scale_full"
STAGES = ("register", "extract", "chunk", "summarize", "keyword", "embed", "publish")
#: the node refuses a new index past cluster.max_shards_per_node (1,000 by default):
#: the bench keeps this much room above what the load needs (raised transiently)
SHARD_HEADROOM = 20
GOAL_RECALL = 0.98
GOAL_P95_MS = 150.0


class EngineMemory:
    """Peak memory of this platform's engines, sampled every `every` seconds:
    PostgreSQL as the sum of its processes' PSS (shared buffers counted once,
    not once per backend), OpenSearch as the JVM's RSS."""

    def __init__(self, settings: GroundworkSettings, every: float = 5.0) -> None:
        self.settings = settings
        self.every = every
        self.peak = {"postgres": 0.0, "opensearch": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> dict[str, float]:
        now = {"postgres": 0.0, "opensearch": 0.0}
        for engine, pids in engine_pids(self.settings).items():
            for pid in pids:
                try:
                    process = psutil.Process(pid)
                    info = process.memory_full_info() if engine == "postgres" else None
                    now[engine] += (info.pss if info else process.memory_info().rss) / 2**20
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
        for engine, mib in now.items():
            self.peak[engine] = max(self.peak[engine], mib)
        return now

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def __enter__(self) -> EngineMemory:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


@dataclasses.dataclass
class StageClock:
    seconds: dict[str, float] = dataclasses.field(
        default_factory=lambda: dict.fromkeys(STAGES, 0.0)
    )
    items: dict[str, int] = dataclasses.field(default_factory=lambda: dict.fromkeys(STAGES, 0))

    def timed(self, stage: str, items: int, started: float) -> None:
        self.seconds[stage] += time.perf_counter() - started
        self.items[stage] += items

    def line(self) -> str:
        return "  ".join(
            f"{stage} {self.items[stage] / self.seconds[stage]:.0f}/s"
            for stage in STAGES
            if self.seconds[stage] > 0
        )


def index_prefix_for(database: str) -> str:
    """Short (groundwork_scale_full_1m -> gwsf-1m): every connect puts the
    keyword mapping on the tenant indexes, and before the pattern fix on branch
    oscluster it named them all in one request line, which OpenSearch refuses
    past 4 KiB (~130 tenants of default-length names)."""
    return "gwsf" + database.removeprefix(DATABASE).replace("_", "-")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wrk_search(
    base: str, requests: Sequence[tuple[str, str]], connections: int, seconds: int
) -> dict[str, float]:
    """wrk on POST /v1/search with bench/search_load.py's script, each request
    the next (API key, query) pair: requests, errors (503 `overloaded` apart),
    refused_503, p50/p95/p99 ms, rps."""
    with tempfile.TemporaryDirectory() as folder:
        queries = Path(folder) / "requests.txt"
        queries.write_text("".join(f"{key}\t{json.dumps(text)}\n" for key, text in requests))
        script = Path(folder) / "search.lua"
        script.write_text(LUA)
        out = subprocess.run(
            [
                *("wrk", f"-t{min(connections, 2)}", f"-c{connections}", f"-d{seconds}s"),
                *("--timeout", "10s", "-s", str(script), f"{base}/v1/search"),
            ],
            capture_output=True,
            text=True,
            env=dict(os.environ, GW_QUERIES=str(queries)),
            timeout=seconds + 60,
            check=True,
        )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def keyword_client(platform: Platform):  # type: ignore[no-untyped-def]
    keywords = platform.keywords
    if not isinstance(keywords, OpenSearchKeywordIndex):
        raise SystemExit(
            "--full measures the OpenSearch keyword leg: unset GROUNDWORK_KEYWORD_BACKEND"
        )
    return keywords.client


def shard_limit(client) -> int:  # type: ignore[no-untyped-def]
    """The node's effective cluster.max_shards_per_node."""
    settings = client.cluster.get_settings(include_defaults=True, flat_settings=True)
    for level in ("transient", "persistent", "defaults"):
        value = settings[level].get("cluster.max_shards_per_node")
        if value is not None:
            return int(value)
    return 1000


def make_room_for(platform: Platform, tenants: int) -> None:
    """One index (one primary shard) per tenant: when the node's shard limit
    (1,000 by default) leaves less than SHARD_HEADROOM room for the tenants'
    indexes, raise it on this node, transiently (gone when the node restarts).
    A limit set from the node's heap (branch oscluster) that has room is kept;
    one that has not is exceeded, and the bench says so (the breaker may trip)."""
    client = keyword_client(platform)
    shards = int(client.cluster.health()["active_shards"])
    existing = len(client.indices.get(index=platform.keywords.pattern))  # type: ignore[attr-defined]
    needed = shards + (tenants - existing) + SHARD_HEADROOM
    limit = shard_limit(client)
    if needed <= limit:
        return
    client.cluster.put_settings(body={"transient": {"cluster.max_shards_per_node": needed}})
    print(
        f"OpenSearch: cluster.max_shards_per_node raised from {limit} to {needed} (transient, "
        f"this node only): {shards} shards open, {tenants - existing} tenant indexes to create"
    )


def topic_bases(
    platform: Platform, model_key: str, topics: TopicDocuments, args: argparse.Namespace
) -> np.ndarray:
    """The real model's vectors of the topic documents, embedded once and kept
    under GROUNDWORK_HOME (a resumed load reuses them)."""
    cache = platform.settings.home / "bench-scale" / f"bases-{model_key}-{args.real}.npy"
    if cache.exists():
        bases = np.load(cache)
        if bases.shape[0] == len(topics.passages):
            return bases
    started = time.perf_counter()
    bases = embed(platform, model_key, topics.passages)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, bases)
    print(
        f"embedded {len(topics.passages)} topic passages in {time.perf_counter() - started:.1f} s"
    )
    return bases


def loaded_tenants(platform: Platform, planned: dict[str, int]) -> set[str]:
    """Tenants whose every planned source is registered and has no work left."""
    busy = {w.tenant_id for w in platform.catalog.pending_work_all()}
    known = {t.tenant_id for t in platform.catalog.list_tenants()}
    return {
        tenant
        for tenant, size in planned.items()
        if tenant in known
        and tenant not in busy
        and platform.catalog.counts(tenant).sources == math.ceil(size / CHUNKS_PER_SOURCE)
    }


def load_tenant(
    loader: Platform,
    tenant: str,
    size: int,
    topics: TopicDocuments,
    extractors: Sequence[ExtractionWorker],
    clock: StageClock,
    seed: int,
) -> str:
    """One tenant through every stage, as its ingest run takes it; says
    whether publication built the tenant's own vector graph."""
    catalog = loader.catalog
    model_key = loader.settings.default_model_key
    catalog.ensure_tenant(tenant, tenant, model_key)
    documents = documents_for(tenant, size, topics, seed)
    started = time.perf_counter()
    for document in documents:
        data = document.markdown.encode()
        register_file(
            catalog,
            loader.blobs,
            tenant_id=tenant,
            origin=f"api:{document.filename}",
            filename=document.filename,
            data=data,
            subjects=document.subjects,
            media_type=loader.sniff_media_type(data, document.filename),
        )
    clock.timed("register", len(documents), started)
    started = time.perf_counter()
    report = extract_pending(catalog, loader.blobs, tenant, extractors=extractors)
    clock.timed("extract", report.processed, started)
    if report.failed:
        print(f"  {tenant}: {report.failed} extraction failures {dict(report.failures)}")
    embedder = loader.embedder(model_key)
    policy = ChunkingPolicy(max_tokens=min(256, embedder.model.max_tokens))  # as assets/chunks.py
    started = time.perf_counter()
    report = chunk_pending(catalog, tenant, embedder.count_tokens, policy)
    clock.timed("chunk", report.items, started)
    started = time.perf_counter()
    summaries = summarize_pending(catalog, tenant, embedder.count_tokens)
    clock.timed("summarize", summaries.items, started)
    started = time.perf_counter()
    report = keyword_index_pending(catalog, loader.keywords, tenant)
    clock.timed("keyword", report.items, started)
    started = time.perf_counter()
    embedded = embedding_metadata(loader, tenant, model_key)
    clock.timed("embed", int(embedded.get("items_written", 0)), started)
    started = time.perf_counter()
    published, checks = publish_and_check(loader, tenant, model_key)
    clock.timed("publish", int(published.get("live_chunks", 0)), started)
    if int(published.get("live_chunks", 0)) == 0 and catalog.counts(tenant).chunks:
        # a stage that did nothing (before summarize_pending was called here, every
        # version waited for its summary and nothing was indexed, embedded or
        # published, while the stores "agreed" on zero rows)
        raise SystemExit(f"{tenant}: its chunks were not published: {published}")
    agree = next(c for c in checks if c.check_name == STORES_AGREE)
    if not agree.passed:
        raise SystemExit(f"{tenant}: the stores disagree after publication: {agree.metadata}")
    graph = str(published.get("tenant_graph", ""))
    return f"publish {time.perf_counter() - started:.1f} s, tenant graph {graph}"


def load(
    platform: Platform, model_key: str, sizes: list[int], args: argparse.Namespace
) -> dict[str, float]:
    real = platform.embedder(model_key)
    topics = load_topics(CORPUS, args.real, real.count_tokens)
    bases = topic_bases(platform, model_key, topics, args)
    mix = TopicMixEmbedder(real, bases, topics.topic_of(), noise=args.noise)
    # the load's own view of the platform: the same pool, stores and catalog,
    # with the stand-in embedder; searches keep the real one
    loader = dataclasses.replace(platform, _embedders={model_key: mix})
    planned = {f"t{t:04d}": size for t, size in enumerate(sizes)}
    done = loaded_tenants(platform, planned)
    todo = [t for t in planned if t not in done]
    print(
        f"corpus: {sum(sizes):,} chunks in {len(sizes)} tenants (largest {sizes[0]:,}, "
        f"median {sorted(sizes)[len(sizes) // 2]}), {CHUNKS_PER_SOURCE} chunks a source; "
        f"{len(topics.passages)} SciFact topic documents"
        + (f"; {len(done)} tenants already loaded, skipped" if done else "")
    )
    make_room_for(platform, len(planned))
    clock = StageClock()
    workers = [ExtractionWorker() for _ in range(available_cores())]
    for worker in workers:
        worker.start()
    started = time.perf_counter()
    last_print = started
    chunks_done = 0
    try:
        for n, tenant in enumerate(todo, 1):
            tenant_started = time.perf_counter()
            published = load_tenant(
                loader, tenant, planned[tenant], topics, workers, clock, args.seed
            )
            chunks_done += planned[tenant]
            now = time.perf_counter()
            if n == len(todo) or now - last_print > 60 or planned[tenant] >= 5000 or n % 50 == 0:
                last_print = now
                print(
                    f"  {n}/{len(todo)} tenants ({tenant}: {planned[tenant]:,} chunks in "
                    f"{now - tenant_started:.0f} s, {published})  "
                    f"{chunks_done:,} chunks in {now - started:.0f} s "
                    f"({chunks_done / (now - started):.0f} chunks/s)  {clock.line()}",
                    flush=True,
                )
    finally:
        for worker in workers:
            worker.close()
    wall = time.perf_counter() - started
    if todo:
        print(f"load: {chunks_done:,} chunks in {wall:.0f} s ({chunks_done / wall:.0f} chunks/s)")
        print(f"  {'stage':<10}{'seconds':>10}{'share':>8}{'items':>12}{'per s':>10}")
        total = sum(clock.seconds.values())
        for stage in STAGES:
            unit = "docs" if stage in ("register", "extract") else "chunks"
            seconds = clock.seconds[stage]
            print(
                f"  {stage:<10}{seconds:>10.1f}{seconds / total:>8.0%}{clock.items[stage]:>12,}"
                f"{clock.items[stage] / seconds if seconds else 0:>10.0f}  {unit}"
            )
        print(f"  vectors mixed {mix.mixed:,}, embedded by the real model {mix.embedded:,}")
        with platform.pool.connection() as conn:  # steady state: what autovacuum would do
            for table in (f"embeddings_{model_key}", "chunks"):
                conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
    return {"wall_s": wall, "chunks": chunks_done}


def api_latency(
    platform: Platform,
    database: str,
    prefix: str,
    samples: dict[str, list[str]],
    args: argparse.Namespace,
) -> dict[str, dict[str, dict[str, float]]]:
    """Hybrid /v1/search over HTTP per size class, with wrk at each level,
    every client cycling through the class's sampled tenants' keys and real
    SciFact queries."""
    texts = list(load_queries(CORPUS).values())
    keys = {
        tenant: platform.catalog.create_api_key(
            tenant, ["team:a"], "bench-scale", scopes=["files:read"]
        )[1]
        for tenants in samples.values()
        for tenant in tenants
    }
    rng = random.Random(args.seed + 3)
    results: dict[str, dict[str, dict[str, float]]] = {}
    pids: list[int] = []
    log = platform.settings.home / "logs" / f"bench-scale-api-{database}.log"
    with (
        api_stderr_to(log),
        serve_api(args.api_port or free_port(), database, prefix, on_start=pids.append) as base,
    ):
        hits: list[int] = []
        failures: list[str] = []
        for tenant, key in keys.items():  # warm-up, and the answers are real
            for text in rng.sample(texts, 2):
                response = httpx.post(
                    f"{base}/v1/search",
                    json={"query": text, "limit": 10},
                    headers={"Authorization": f"Bearer {key}"},
                    timeout=60,
                )
                if response.status_code != 200:
                    failures.append(f"{tenant}: {response.status_code} {response.text[:200]}")
                else:
                    hits.append(len(response.json()["hits"]))
        print(
            f"/v1/search warm-up: {len(hits)} answered, {len(failures)} failed, "
            f"mean {statistics.fmean(hits) if hits else 0:.1f} hits; API RSS {api_rss_mib(pids[0]):.0f} MiB"
        )
        for failure in failures[:5]:
            print(f"  {failure}")
        for name, tenants in samples.items():
            if not tenants:
                continue
            requests = [(keys[rng.choice(tenants)], rng.choice(texts)) for _ in range(2000)]
            results[name] = {}
            for clients in (int(c) for c in args.levels.split(",")):
                result = wrk_search(base, requests, clients, args.seconds)
                results[name][str(clients)] = result
                print(
                    f"  {name:<7} {clients} client(s): p50 {result['p50_ms']:.1f}  "
                    f"p95 {result['p95_ms']:.1f}  p99 {result['p99_ms']:.1f} ms  "
                    f"{result['rps']:.1f} req/s  errors {result['errors']} of {result['requests']} "
                    f"(503 {result['refused_503']})",
                    flush=True,
                )
        print(f"API RSS after the load: {api_rss_mib(pids[0]):.0f} MiB")
    print(f"API log {log}: {failed_requests(log)}")
    return results


@contextlib.contextmanager
def api_stderr_to(path: Path) -> Iterator[None]:
    """The API child inherits this process's stderr: send it to a file for the
    child's lifetime, so a failing request's traceback does not flood the figures."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("w") as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def failed_requests(log: Path) -> str:
    """How many requests the API logged as failed, by the last line of their traceback."""
    reasons: dict[str, int] = {}
    lines = log.read_text(errors="replace").splitlines()
    for n, line in enumerate(lines):
        if line.startswith("request failed"):
            last = next(
                (
                    x
                    for x in lines[n + 1 :]
                    if x and not x.startswith((" ", "Traceback", "The above"))
                ),
                "?",
            )
            reason = re.sub(r"\[\d+/[\d.]+\w+\]|\d+", "#", last)[:160]
            reasons[reason] = reasons.get(reason, 0) + 1
    if not reasons:
        return "no failed request"
    return f"{sum(reasons.values())} failed requests: " + "; ".join(
        f"{count} x {reason}" for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1])
    )


def engine_report(platform: Platform, prefix: str, memory: EngineMemory, model_key: str) -> None:
    client = keyword_client(platform)
    health = client.cluster.health()
    node = next(iter(client.nodes.stats(metric="jvm,breaker")["nodes"].values()))
    jvm = node["jvm"]["mem"]
    parent = node["breakers"]["parent"]
    indices = client.cat.indices(index=f"{prefix}-*", format="json", bytes="b")
    store = sum(int(i["store.size"] or 0) for i in indices)
    docs = sum(int(i["docs.count"] or 0) for i in indices)
    limit = shard_limit(client)
    opensearch_pids = engine_pids(platform.settings)["opensearch"]
    print(
        f"OpenSearch: {health['active_shards']} shards on the node (limit {limit}), "
        f"{len(indices)} tenant indexes of this corpus holding {docs:,} documents in "
        f"{store / 2**20:.0f} MiB; heap used {jvm['heap_used_in_bytes'] / 2**20:.0f} of "
        f"{jvm['heap_max_in_bytes'] / 2**20:.0f} MiB (parent breaker at "
        f"{parent['limit_size_in_bytes'] / 2**20:.0f} MiB, tripped {parent['tripped']} times "
        f"since the node started); JVM RSS peak (sampled) "
        f"{memory.peak['opensearch']:.0f} MiB"
        + (
            f", VmHWM {peak_rss_mib(opensearch_pids[0]):.0f} MiB (node lifetime)"
            if opensearch_pids
            else ""
        )
    )
    with platform.pool.connection() as conn:
        row = conn.execute(
            "SELECT pg_database_size(current_database()), "
            "pg_total_relation_size('chunks'), current_setting('shared_buffers')"
        ).fetchone()
    assert row is not None
    print(
        f"PostgreSQL: database {row[0] / 2**20:.0f} MiB (chunks table with indexes "
        f"{row[1] / 2**20:.0f} MiB), shared_buffers {row[2]}; peak memory (sampled sum of PSS) "
        f"{memory.peak['postgres']:.0f} MiB"
    )
    for name, size in sizes_report(platform, model_key).items():
        print(f"  {name:<45} {size / 2**20:8.1f} MiB")


def run(args: argparse.Namespace) -> None:
    if os.environ.get("GROUNDWORK_KEYWORD_BACKEND", "opensearch") != "opensearch":
        raise SystemExit(
            "--full measures the OpenSearch keyword leg: unset GROUNDWORK_KEYWORD_BACKEND"
        )
    database = args.database or DATABASE
    prefix = index_prefix_for(database)
    settings = GroundworkSettings.from_env()
    platform = connect(settings, ensure_engines(settings), database=database, index_prefix=prefix)
    model_key = settings.default_model_key
    with EngineMemory(settings) as memory:
        if not args.skip_load:
            load(platform, model_key, tenant_sizes(args.chunks, args.tenants), args)
        if args.load_only:
            platform.close()
            return
        sizes = live_sizes(platform, model_key)
        if not sizes:
            raise SystemExit(f"nothing is published in {database}: run without --skip-load")
        print(f"measuring {database}: {sum(sizes.values()):,} live chunks in {len(sizes)} tenants")
        real = platform.embedder(model_key)
        query_texts = list(load_queries(CORPUS).values())
        queries = np.asarray([real.embed_query(q) for q in query_texts[:200]], dtype=np.float32)
        samples = sample_tenants(sizes, args)
        recall = measure(platform, model_key, queries, args, sizes, samples)
        print("vector leg (the adapter's search under tenant + subjects, vs exact):")
        print_table(recall)
        for ef in [int(x) for x in args.ef_search.split(",") if x.strip()]:
            print(f"vector leg at hnsw.ef_search {ef}:")
            print_table(measure(platform, model_key, queries, args, sizes, samples, ef))
        latency = api_latency(platform, database, prefix, samples, args)
        memory.sample()
    engine_report(platform, prefix, memory, model_key)
    print_goals(sum(sizes.values()), recall, latency)
    platform.close()


def print_goals(
    chunks: int,
    recall: dict[str, dict[str, float]],
    latency: dict[str, dict[str, dict[str, float]]],
) -> None:
    print(
        f"goal (issue 14), at {chunks:,} chunks: recall@10 >= {GOAL_RECALL} for every class, "
        f"hybrid p95 <= {GOAL_P95_MS:.0f} ms at 8 clients, 0 errors"
    )
    met = True
    for name, _, _ in CLASSES:
        if name not in recall or not recall[name]["queries"]:
            continue
        at8 = latency.get(name, {}).get("8")
        ok_recall = recall[name]["recall_mean"] >= GOAL_RECALL
        ok_p95 = at8 is not None and at8["p95_ms"] <= GOAL_P95_MS and at8["errors"] == 0
        met = met and ok_recall and ok_p95
        print(
            f"  {name:<7} recall@10 {recall[name]['recall_mean']:.3f} "
            f"{'met' if ok_recall else 'NOT met'}; p95 at 8 clients "
            + (
                f"{at8['p95_ms']:.1f} ms, {at8['errors']:.0f} errors "
                f"{'met' if ok_p95 else 'NOT met'}"
                if at8
                else "not measured"
            )
        )
    print(f"  {'all goals met' if met else 'goals NOT met'}")


__all__ = ["run"]
