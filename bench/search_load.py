"""/v1/search under load with wrk (a real load tool), loopback only, bounded.

    uv run python bench/search_load.py [--beir ../shared/data/scifact] [--seconds 20]
    uv run python bench/search_load.py --replica --levels 1,8   # also through a read replica
    uv run python bench/search_load.py --stack [--tenant T]     # the running `groundwork up` instead

Serves the API (one uvicorn process) over a BEIR corpus already ingested by
`bench/ingest_and_search.py --beir ...` (database groundwork_bench) or, if
none is there, over a synthetic corpus it ingests first; then runs wrk at 1
and 8 concurrent connections and prints p50/p95/p99 and errors. Requires the
Debian package `wrk`.

Each level also prints the CPU it cost per request, read from /proc for the
real processes over the run: the API server (with its workers), this
platform's PostgreSQL and OpenSearch, and wrk itself; and the API's share of
the three servers' CPU. The API's figure includes the query embedding; with
the query cache on (the default) the queries repeat and most embeddings are
cache hits, so `--no-query-cache` shows the cost of embedding every query.
`--workers N` runs N API worker processes.

`--replica` makes a streaming standby of the embedded PostgreSQL
(resources/engines/postgres_standby.py), runs every level again with the API
reading the vector leg from it (GROUNDWORK_DATABASE_REPLICA_URL), prints both,
and the transactions the standby served; the standby is removed afterwards.
On one machine the replica shares the primary's cores: the figure shows the
cost of the extra round trips, not the capacity a second machine adds.

`--tracing` serves the API alternately with metrics and tracing both off and
both on (GROUNDWORK_METRICS_TOKEN set and /metrics scraped every 5 s, as a
Prometheus would; GROUNDWORK_OTLP_ENDPOINT pointing at a Jaeger the bench
starts under the home, sampled at `--trace-ratio`), `--rounds` times each, and
prints the servers' CPU per search of each and how much "on" grows it (issue
#33: at most 5%). Jaeger's own CPU is printed apart: a receiver runs elsewhere.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import httpx  # noqa: E402
import psycopg  # noqa: E402

from bench.search_profile import engine_pids  # noqa: E402
from bench.tenants import DATABASE, PREFIX, SCIFACT, found_bench_tenant  # noqa: E402
from bench.wrk import run_wrk, wrk_files  # noqa: E402
from evals.beir import load_queries  # noqa: E402
from groundwork.embedding_models import model_by_key  # noqa: E402
from groundwork.ports import AccessScope  # noqa: E402
from groundwork.services.retrieval import DEFAULT_DEPTH  # noqa: E402
from resources.composition.platform import EngineEndpoints, connect, ensure_engines  # noqa: E402
from resources.composition.settings import GroundworkSettings  # noqa: E402
from resources.engines.jaeger import EmbeddedJaeger  # noqa: E402
from resources.engines.postgres_standby import EmbeddedStandby  # noqa: E402
from testbed.api_server import serve_api  # noqa: E402

REPLICA_ENV = "GROUNDWORK_DATABASE_REPLICA_URL"
METRICS_TOKEN = "bench-operator-token"
#: how often the "on" configuration's /metrics is scraped (Prometheus' usual 5-15 s)
SCRAPE_SECONDS = 5.0


def api_rss_mib(pid: int) -> float:
    """Resident memory of the API: the server process and its workers."""
    import psutil

    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / 2**20


def process_cpu_seconds(pids: list[int]) -> float:
    """CPU of the given processes and their children (an API's workers, a
    PostgreSQL's backends) that are alive now."""
    import psutil

    total = 0.0
    seen: set[int] = set()
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for proc in [root, *root.children(recursive=True)]:
                if proc.pid in seen:
                    continue
                seen.add(proc.pid)
                times = proc.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def server_cpu(api_pid: int, settings: GroundworkSettings) -> dict[str, float]:
    engines = engine_pids(settings)
    return {
        "api": process_cpu_seconds([api_pid]),
        "postgres": process_cpu_seconds(engines["postgres"][:1]),
        "opensearch": process_cpu_seconds(engines["opensearch"]),
    }


def cpu_line(
    before: dict[str, float],
    after: dict[str, float],
    result: dict[str, float],
    embedding_ms: float | None,
) -> str:
    """CPU ms per request by process, and the API's share of the servers' CPU;
    with every query embedded (`embedding_ms`, no query cache) also the
    service's own share: the API's CPU minus the embedding, of the total."""
    served = max(1.0, result["requests"])
    per = {name: (after[name] - before[name]) * 1000 / served for name in before}
    servers = sum(per.values())
    wrk = result["wrk_cpu_s"] * 1000 / served
    line = (
        f"CPU per request: API {per['api']:.1f} ms, PostgreSQL {per['postgres']:.1f} ms, "
        f"OpenSearch {per['opensearch']:.1f} ms (servers {servers:.1f} ms; API "
        f"{per['api'] / servers * 100 if servers else 0:.0f}% of it), wrk {wrk:.1f} ms"
    )
    if embedding_ms is not None and servers:
        own = per["api"] - embedding_ms
        line += (
            f"; the service's own CPU (API minus {embedding_ms:.1f} ms of embedding) "
            f"{own:.1f} ms = {own / servers * 100:.0f}% of the servers'"
        )
    return line


def embedding_cpu_ms(settings: GroundworkSettings, model_key: str, texts: list[str]) -> float:
    """CPU per query embedding of the serving provider (one thread, as the API
    runs it), measured in this process on the bench's own queries."""
    from resources.models.embeddings import load_embedding_provider

    provider = load_embedding_provider(model_by_key(model_key), settings.models_dir, serving=True)
    for text in texts[:10]:
        provider.embed_query(text)
    started = time.thread_time()
    for text in texts[:100]:
        provider.embed_query(text)
    return (time.thread_time() - started) * 1000 / len(texts[:100])


def replica_transactions(standby: EmbeddedStandby | None) -> int:
    """Transactions committed on the standby in the bench database (its own
    statistics: read-only transactions of the clients it served)."""
    if standby is None:
        return 0
    with psycopg.connect(standby.uri(DATABASE)) as conn:
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (DATABASE,)
        ).fetchone()
    return int(row[0]) if row else 0


def vector_leg_interleaved(
    settings: GroundworkSettings,
    endpoints: EngineEndpoints,
    standby: EmbeddedStandby,
    tenant: str,
    texts: list[str],
    rounds: int = 300,
) -> None:
    """The vector leg alone, in this process, primary and replica alternating
    call by call (so the machine's drifting load hits both alike): what the
    replica path adds (the primary's generation read) or saves."""
    primary = connect(settings, endpoints, database=DATABASE, index_prefix=PREFIX)
    replicated = connect(
        replace(settings, database_replica_url=standby.uri("postgres")),
        endpoints,
        database=DATABASE,
        index_prefix=PREFIX,
    )
    try:
        model = primary.serving_model(tenant)
        embedder = primary.embedder(model)
        vectors = [embedder.embed_query(t) for t in texts[:50]]
        scope = AccessScope(tenant, (f"tenant:{tenant}",))
        legs = {"primary": primary.vector_index(model), "replica": replicated.vector_index(model)}
        times: dict[str, list[float]] = {name: [] for name in legs}
        for i in range(rounds):
            for name, index in legs.items():
                started = time.perf_counter()
                index.search(scope, vectors[i % len(vectors)], DEFAULT_DEPTH)
                times[name].append((time.perf_counter() - started) * 1000)
        replica = replicated.replica
        print(f"vector leg alone, {rounds} calls each, interleaved, in-process:")
        for name, values in times.items():
            values.sort()
            print(
                f"  {name}: p50 {statistics.median(values):.2f} ms  "
                f"p95 {values[int(len(values) * 0.95)]:.2f} ms"
            )
        if replica is not None:
            print(
                f"  replica served {replica.use.served}, behind {replica.use.behind}, "
                f"failed {replica.use.failed}"
            )
    finally:
        replicated.close()
        primary.close()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--beir", type=Path, default=SCIFACT)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--port", type=int, default=8098)
    parser.add_argument("--workers", type=int, default=1, help="API worker processes")
    parser.add_argument(
        "--levels", default="1,8,50", help="concurrent connections, comma-separated"
    )
    parser.add_argument(
        "--replica",
        action="store_true",
        help="also run with the vector leg on a streaming standby of the embedded PostgreSQL",
    )
    parser.add_argument("--tenant", help="default: the bench database's largest tenant")
    parser.add_argument(
        "--no-query-cache", action="store_true", help="the API embeds every query (no cache)"
    )
    parser.add_argument(
        "--tracing", action="store_true", help="metrics and tracing off against both on"
    )
    parser.add_argument("--trace-ratio", type=float, default=0.1, help="with --tracing")
    parser.add_argument("--rounds", type=int, default=2, help="with --tracing: off/on pairs")
    return parser.parse_args()


def start_standby(settings: GroundworkSettings, endpoints: EngineEndpoints) -> EmbeddedStandby:
    """A streaming standby of the embedded PostgreSQL, caught up."""
    standby = EmbeddedStandby(endpoints.server_url, settings.home / "pgstandby-bench")
    standby.destroy()  # a standby left by an interrupted run starts over
    standby.start()
    standby.wait_for_replay()
    return standby


@dataclass(frozen=True, slots=True)
class LoadRun:
    """What one configuration's levels share: the tenant and its key, wrk's
    files, the levels and the embedding CPU (with the query cache off)."""

    args: argparse.Namespace
    settings: GroundworkSettings
    tenant: str
    chunks: int
    key: str
    files: tuple[Path, Path]
    texts: list[str]
    embedding_ms: float | None


def measure_levels(load: LoadRun, base: str, api_pid: int) -> dict[int, float]:
    """wrk at each level against the served API, with the CPU each cost; returns
    the servers' CPU ms per request at each level."""
    script, queries_file = load.files
    servers: dict[int, float] = {}
    for connections in (int(c) for c in load.args.levels.split(",")):
        cpu_before = server_cpu(api_pid, load.settings)
        result = run_wrk(base, connections, load.args.seconds, script, queries_file, load.key)
        cpu_after = server_cpu(api_pid, load.settings)
        print(
            f"  {connections} client(s): p50 {result['p50_ms']:.1f} ms  p95 {result['p95_ms']:.1f} ms  "
            f"p99 {result['p99_ms']:.1f} ms  {result['rps']:.1f} req/s  errors {result['errors']} "
            f"of {result['requests']}  (503 {result['refused_503']})  "
            f"API RSS {api_rss_mib(api_pid):.0f} MiB"
        )
        print("    " + cpu_line(cpu_before, cpu_after, result, load.embedding_ms))
        served = max(1.0, result["requests"])
        servers[connections] = sum(cpu_after[k] - cpu_before[k] for k in cpu_before) * 1000 / served
    return servers


def scraping(base: str, stop: threading.Event) -> None:
    """GET /metrics every SCRAPE_SECONDS until `stop`: the scrape's cost is part of "on"."""
    while not stop.wait(SCRAPE_SECONDS):
        httpx.get(
            f"{base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=10
        )


def serve_and_measure(
    load: LoadRun, label: str, env: dict[str, str], standby: EmbeddedStandby | None
) -> dict[int, float]:
    """One configuration: the API served with `env`, warmed up, then every level."""
    args = load.args
    served_before = replica_transactions(standby) if env[REPLICA_ENV] else 0
    pids: list[int] = []
    with serve_api(
        args.port, DATABASE, PREFIX, on_start=pids.append, workers=args.workers, extra_env=env
    ) as base:
        for text in load.texts[:20]:  # warm-up: model sessions, pools, caches
            httpx.post(
                f"{base}/v1/search",
                json={"query": text},
                headers={"Authorization": f"Bearer {load.key}"},
                timeout=30,
            )
        print(
            f"/v1/search on tenant {load.tenant} ({load.chunks} chunks), {label}, {args.workers} API "
            f"worker(s), query cache {'off' if args.no_query_cache else 'on'}, "
            f"wrk {args.seconds} s per level, loopback; API RSS "
            f"{api_rss_mib(pids[0]):.0f} MiB"
        )
        stop = threading.Event()
        scraper = threading.Thread(target=scraping, args=(base, stop), daemon=True)
        if env.get("GROUNDWORK_METRICS_TOKEN"):
            scraper.start()
        try:
            servers = measure_levels(load, base, pids[0])
        finally:
            stop.set()
    if env[REPLICA_ENV] and standby is not None:
        served = replica_transactions(standby) - served_before
        print(f"  transactions the replica served: {served}")
    return servers


def tracing_runs(
    args: argparse.Namespace, jaeger: EmbeddedJaeger, cache: dict[str, str]
) -> list[tuple[str, dict[str, str]]]:
    """Off and on, alternating, so both share the machine's noise."""
    off = {REPLICA_ENV: "", "GROUNDWORK_METRICS_TOKEN": "", "GROUNDWORK_OTLP_ENDPOINT": "", **cache}
    on = {
        **off,
        "GROUNDWORK_METRICS_TOKEN": METRICS_TOKEN,
        "GROUNDWORK_OTLP_ENDPOINT": jaeger.otlp_endpoint,
        "GROUNDWORK_TRACE_SAMPLE_RATIO": str(args.trace_ratio),
    }
    return [
        run
        for _ in range(args.rounds)
        for run in (
            ("metrics and tracing off", off),
            (f"metrics and tracing on (sample ratio {args.trace_ratio})", on),
        )
    ]


def print_tracing_cost(figures: list[tuple[str, dict[int, float]]], jaeger_cpu_s: float) -> None:
    """The servers' CPU per search, off against on, at each level (medians of the rounds)."""
    for level in figures[0][1]:
        off = [f[level] for label, f in figures if label.endswith("off")]
        on = [f[level] for label, f in figures if not label.endswith("off")]
        off_ms, on_ms = statistics.median(off), statistics.median(on)
        print(
            f"  {level} client(s): servers' CPU per search off {off_ms:.2f} ms "
            f"({', '.join(f'{x:.2f}' for x in off)}), on {on_ms:.2f} ms "
            f"({', '.join(f'{x:.2f}' for x in on)}): {(on_ms / off_ms - 1) * 100:+.1f}%"
        )
    print(f"  Jaeger (the receiver, not counted above): {jaeger_cpu_s:.1f} s of CPU in all")


def main() -> int:
    if "--stack" in sys.argv[1:]:
        # what an operator gets (issue #33): the API `groundwork up` serves, with
        # its options (bench/search_stack.py imports this module's helpers)
        from bench import search_stack

        sys.argv.remove("--stack")
        return search_stack.main()
    args = parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed (Debian: apt-get install wrk)")
        return 1
    settings = GroundworkSettings.from_env()
    endpoints = ensure_engines(settings)
    platform = connect(settings, endpoints, database=DATABASE, index_prefix=PREFIX)
    tenant = found_bench_tenant(
        platform.catalog, args.tenant, "run bench/ingest_and_search.py first"
    )
    if tenant is None:
        return 1
    chunks = platform.catalog.counts(tenant).chunks
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "load")
    if args.beir.exists():
        texts = list(load_queries(args.beir).values())
    else:
        texts = [f"storage quota policy for team {i}" for i in range(200)]
    random.Random(5).shuffle(texts)
    with wrk_files(texts[:1000]) as files:
        embedding_ms = (
            embedding_cpu_ms(settings, platform.serving_model(tenant), texts)
            if args.no_query_cache
            else None
        )
        load = LoadRun(args, settings, tenant, chunks, key, files, texts, embedding_ms)
        standby: EmbeddedStandby | None = None
        try:
            cache = {"GROUNDWORK_QUERY_CACHE_ENTRIES": "0"} if args.no_query_cache else {}
            runs: list[tuple[str, dict[str, str]]] = [("primary only", {REPLICA_ENV: "", **cache})]
            if args.replica:
                if endpoints.postgres is None:
                    print(
                        "--replica makes a standby of the embedded PostgreSQL; unset GROUNDWORK_DATABASE_URL"
                    )
                    return 1
                standby = start_standby(settings, endpoints)
                runs.append(
                    ("vector leg on the replica", {REPLICA_ENV: standby.uri("postgres"), **cache})
                )
            if args.tracing:
                return measure_tracing(load, settings, cache)
            for label, env in runs:
                serve_and_measure(load, label, env, standby)
            if standby is not None:
                vector_leg_interleaved(settings, endpoints, standby, tenant, texts)
        finally:
            if standby is not None:
                standby.destroy()
            platform.close()
    return 0


def measure_tracing(load: LoadRun, settings: GroundworkSettings, cache: dict[str, str]) -> int:
    jaeger = EmbeddedJaeger(settings.home / "jaeger-bench", otlp_port=4338, query_port=16706)
    jaeger.start()
    try:
        pid = int(jaeger.pid_file.read_text())
        jaeger_before = process_cpu_seconds([pid])
        figures = [
            (label, serve_and_measure(load, label, env, None))
            for label, env in tracing_runs(load.args, jaeger, cache)
        ]
        print("metrics and tracing, off against on (a loaded machine: compare within the run):")
        print_tracing_cost(figures, process_cpu_seconds([pid]) - jaeger_before)
    finally:
        jaeger.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
