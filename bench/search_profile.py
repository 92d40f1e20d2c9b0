"""Where a /v1/search request's CPU goes, by layer, at 1 and 8 clients.

    uv run python bench/search_profile.py [--seconds 15]

Serves the real API with uvicorn in this process and drives it with wrk from
outside (so the figure holds the framework, validation and JSON of a real
server and no client's work), over the largest tenant of the benchmark
database (`bench/ingest_and_search.py --beir ...` first). Each layer is timed
by wrapping the adapter method that is that layer, with the CPU time of the
thread that runs it (client libraries included; the serving embedder runs
on one thread) and wall time (which also covers waiting on an engine):

- embedding: the query embedding (tokenizer + ONNX)
- vector leg: the pgvector search through psycopg
- keyword leg: the OpenSearch search through opensearch-py
- re-check: reading the hits' chunks back under the caller's access
- citations: recording issued ids and citations
- service: everything else in the request (auth, routing, validation,
  fusion, response building, JSON, threads) = this process's CPU over the
  run minus the layers above

The garbage collector is tuned as the served process tunes it
(retrieval_api.collector; `--default-gc` leaves CPython's defaults): each
level prints the collector's CPU per request and its longest collection, a
pause every thread waits out.

The query cache is on, as served: the 1-client level embeds each query the
first time, and the 8-client level, which repeats them, is served from the
cache. `--no-query-cache` embeds every query, as for a service whose queries
never repeat. Engine CPU is read from /proc for the PostgreSQL and OpenSearch
processes before and after, divided by the request count. The last lines are
the service's own share: (request CPU - embedding) / (request CPU + engine
CPU), the issue's "service's own CPU per request" (target <= 30%).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil  # noqa: E402
import uvicorn  # noqa: E402

from bench.tenants import SCIFACT, connect_bench_database, found_bench_tenant  # noqa: E402
from bench.wrk import run_wrk, wrk_files  # noqa: E402
from evals.beir import load_queries  # noqa: E402
from resources.composition.settings import GroundworkSettings  # noqa: E402
from resources.models.embeddings import OnnxEmbeddingProvider  # noqa: E402
from resources.opensearch.keyword_index import OpenSearchKeywordIndex  # noqa: E402
from resources.postgres.catalog import PostgresCatalog  # noqa: E402
from resources.postgres.catalog_parts.reading import PublishedChunkReader  # noqa: E402
from resources.postgres.vector_index import PgVectorIndex  # noqa: E402
from retrieval_api.app import create_app  # noqa: E402
from retrieval_api.collector import tune_for_serving  # noqa: E402

LAYERS = ("embedding", "vector leg", "keyword leg", "re-check", "citations")


class Meter:
    """Per-layer CPU and wall time. A layer's CPU is its own thread's: with
    the whole process's clock, the keyword leg (on its own thread) and the
    embedding it overlaps counted each other's time (keyword leg 2.1 ms at 1
    client, 0.5 at 8)."""

    clock: Callable[[], float] = time.thread_time

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.wall: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()
        self._local = threading.local()

    @contextmanager
    def layer(self, name: str) -> Iterator[None]:
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        clock = self.clock
        cpu, wall = clock(), time.perf_counter()
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:  # nested layers count once, in the outer one
                with self._lock:
                    self.cpu[name] += clock() - cpu
                    self.wall[name] += time.perf_counter() - wall


class CollectorClock:
    """The garbage collector's CPU (the collecting thread's) and longest pause."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.longest = 0.0
        self._started = 0.0
        gc.callbacks.append(self._observe)

    def _observe(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time()
            return
        spent = time.thread_time() - self._started
        self.cpu += spent
        self.longest = max(self.longest, spent)

    def reset(self) -> None:
        self.cpu = self.longest = 0.0


def wrap(cls: type, method: str, meter: Meter, name: str) -> None:
    original: Callable[..., Any] = getattr(cls, method)

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        with meter.layer(name):
            return original(self, *args, **kwargs)

    setattr(cls, method, timed)


class Counted:
    """How many ids the re-check is asked per search: the candidates it reads
    back (body, location, heading path) for one answer of 10."""

    def __init__(self) -> None:
        self.ids = 0
        self.calls = 0
        self._lock = threading.Lock()

    def wrap(self, cls: type, method: str) -> None:
        original: Callable[..., Any] = getattr(cls, method)

        def counted(this: Any, scope: Any, chunk_ids: Any, *rest: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.ids += len(chunk_ids)
                self.calls += 1
            return original(this, scope, chunk_ids, *rest, **kwargs)

        setattr(cls, method, counted)


def engine_cpu_seconds(platform_pids: dict[str, list[int]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for engine, pids in platform_pids.items():
        total = 0.0
        for pid in pids:
            try:
                times = psutil.Process(pid).cpu_times()
                total += times.user + times.system
            except psutil.NoSuchProcess:
                continue
        out[engine] = total
    return out


def engine_pids(settings: GroundworkSettings) -> dict[str, list[int]]:
    """This platform's engines only (other checkouts' test engines may share the
    machine): the postmaster of its data directory with its backends, and the
    OpenSearch JVM whose command line names its home."""
    found: dict[str, list[int]] = {"postgres": [], "opensearch": []}
    pid_file = settings.pgdata / "postmaster.pid"
    if pid_file.exists():
        postmaster = psutil.Process(int(pid_file.read_text().split()[0]))
        found["postgres"] = [postmaster.pid, *(c.pid for c in postmaster.children())]
    home = str(settings.opensearch_home)
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if "java" in (proc.info["name"] or "") and home in cmd:
            found["opensearch"].append(proc.pid)
    return found


def run_level(
    base: str,
    key: str,
    files: tuple[Path, Path],
    seconds: int,
    clients: int,
    meter: Meter,
    settings: GroundworkSettings,
    collector: CollectorClock,
) -> dict[str, float]:
    pids = engine_pids(settings)
    before = engine_cpu_seconds(pids)
    meter.cpu.clear()
    meter.wall.clear()
    collector.reset()
    process_started = time.process_time()
    script, queries_file = files
    result = run_wrk(base, clients, seconds, script, queries_file, key)
    process_cpu = time.process_time() - process_started
    pids_after = engine_pids(settings)  # pool connections opened meanwhile count from zero
    after = engine_cpu_seconds(pids_after)
    assert result["errors"] == 0, result
    per = 1000.0 / result["requests"]
    figures = {f"{name} cpu": meter.cpu[name] * per for name in LAYERS}
    figures.update({f"{name} wall": meter.wall[name] * per for name in LAYERS})
    figures["request cpu"] = process_cpu * per
    figures["service cpu"] = figures["request cpu"] - sum(meter.cpu[n] * per for n in LAYERS)
    figures["postgres cpu"] = (after["postgres"] - before["postgres"]) * per
    figures["opensearch cpu"] = (after["opensearch"] - before["opensearch"]) * per
    figures["gc cpu"] = collector.cpu * per
    figures["longest gc ms"] = collector.longest * 1000
    figures["p99 ms"] = result["p99_ms"]
    figures["req/s"] = result["rps"]
    figures["requests"] = result["requests"]
    return figures


@contextmanager
def served(app: Any, port: int) -> Iterator[str]:
    """uvicorn in a thread of this process, so the layers' wrappers see its requests."""
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the API did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=15, help="wrk's run per level")
    parser.add_argument("--port", type=int, default=8097)
    parser.add_argument("--beir", type=Path, default=SCIFACT)
    parser.add_argument("--tenant", help="default: the bench database's largest tenant")
    parser.add_argument(
        "--clients",
        type=int,
        nargs="+",
        default=[1, 8],
        help="the levels to run (repeat a level to see the run-to-run spread)",
    )
    parser.add_argument(
        "--default-gc",
        action="store_true",
        help="CPython's collector settings, not the served process's",
    )
    parser.add_argument(
        "--no-query-cache",
        action="store_true",
        help="embed every query (no cache), as a service whose queries never repeat",
    )
    return parser.parse_args()


def instrument_layers(meter: Meter) -> Counted:
    """Each layer's adapter method timed by `meter`; the re-check's ids counted."""
    wrap(OnnxEmbeddingProvider, "embed_query", meter, "embedding")
    wrap(PgVectorIndex, "search", meter, "vector leg")
    wrap(OpenSearchKeywordIndex, "search", meter, "keyword leg")
    wrap(PublishedChunkReader, "load_chunks", meter, "re-check")
    rechecked = Counted()
    rechecked.wrap(PublishedChunkReader, "load_chunks")
    wrap(PostgresCatalog, "record_citations", meter, "citations")
    return rechecked


def print_layers(rows: dict[str, dict[str, float]]) -> None:
    """The layers' CPU and wall ms per request, a column per level."""
    print(f"{'':22s}" + "".join(f"{f'{c} client(s)':>14s}" for c in rows))
    names = [
        *(f"{n} cpu" for n in LAYERS),
        "service cpu",
        "request cpu",
        "postgres cpu",
        "opensearch cpu",
        "gc cpu",
        "longest gc ms",
        "p99 ms",
    ]
    for name in names:
        print(f"{name:22s}" + "".join(f"{rows[c][name]:14.2f}" for c in rows))
    for name in (f"{n} wall" for n in LAYERS):
        print(f"{name:22s}" + "".join(f"{rows[c][name]:14.2f}" for c in rows))


def print_shares(rows: dict[str, dict[str, float]], rechecked: Counted) -> None:
    """The service's own share of each level's CPU, and the ids re-checked."""
    for c, row in rows.items():
        total = row["request cpu"] + row["postgres cpu"] + row["opensearch cpu"]
        own = row["request cpu"] - row["embedding cpu"]
        print(
            f"{c} client(s): {row['req/s']:.1f} req/s; total CPU {total:.1f} ms/request; "
            f"API process minus embedding {own:.2f} ms = {100 * own / total:.1f}% of it"
        )
    searches = sum(row["requests"] for row in rows.values())
    print(
        f"re-check: {rechecked.ids / searches:.1f} ids read per search "
        f"in {rechecked.calls / searches:.2f} reads"
    )
    print(json.dumps({c: {k: round(v, 2) for k, v in row.items()} for c, row in rows.items()}))


def main() -> int:
    args = parse_args()
    if args.no_query_cache:
        os.environ["GROUNDWORK_QUERY_CACHE_ENTRIES"] = "0"
    platform = connect_bench_database(serving=True)
    settings = GroundworkSettings.from_env()
    tenant = found_bench_tenant(
        platform.catalog, args.tenant, "run bench/ingest_and_search.py --beir ... first"
    )
    if tenant is None:
        return 1
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "profile")
    queries = (
        list(load_queries(args.beir).values())
        if args.beir.exists()
        else [f"storage quota policy {i}" for i in range(300)]
    )
    random.Random(3).shuffle(queries)

    meter = Meter()
    rechecked = instrument_layers(meter)
    app = create_app(lambda: platform)
    collector = CollectorClock()
    if not args.default_gc:
        tune_for_serving()
    with served(app, args.port) as base, wrk_files(queries[:1000]) as files:
        run_level(base, key, files, 3, 1, meter, settings, collector)  # warm-up: sessions, pools
        rechecked.ids = rechecked.calls = 0
        rows = {
            f"{clients}#{i}" if args.clients.count(clients) > 1 else str(clients): run_level(
                base, key, files, args.seconds, clients, meter, settings, collector
            )
            for i, clients in enumerate(args.clients)
        }
    print(
        f"/v1/search CPU by layer, ms per request (wrk {args.seconds} s per level, tenant "
        f"{tenant}, query cache {'off' if args.no_query_cache else 'on'}, "
        f"collector {'default' if args.default_gc else 'as served'})"
    )
    print_layers(rows)
    print_shares(rows, rechecked)
    platform.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
