"""/v1/search through the stack a user runs (`groundwork up`), under wrk.

    uv run python bench/search_stack.py [--levels 1,8,50] [--seconds 20]
    uv run python bench/search_stack.py --tracing [--trace-ratio 0.1] [--rounds 2]
    uv run python bench/search_stack.py --against <checkout> [--pairs 8]   # A/B, bench/api_ab.py

`bench/search_load.py` serves a bare API over the bench database; this bench
measures what an operator gets instead (issue #33): the API `groundwork up`
serves, beside the Dagster daemon, webserver, code servers and MCP server, on
the home GROUNDWORK_HOME names, with the corpus a user ingested there (the
largest tenant by chunks, or `--tenant`; e.g. SciFact through
`groundwork eval --beir ../shared/data/scifact`). A stack already running on
that home (its supervisor.json) is used as it is; otherwise the bench starts
`groundwork up` and stops it after (the GROUNDWORK_*_PORT settings apply).

The queries are the BEIR split's (`--split`, SciFact train by default),
shuffled and cycled by wrk (Debian package `wrk`: `apt-get install wrk`) with
an API key of the tenant made for the run. A warm-up pass (`--warmup`
seconds at 8 clients, not counted; 15 s, or 60 s with `--tracing`) fills the
query cache as a serving stack's would be. `--tracing` restarts the stack for
each half, and a stack's first minute is OpenSearch's JIT warming (20-25 ms
of CPU per search against 12-16 warm): with a 15 s warm-up the same code
measured +12.2% for tracing, with 60 s +0.9%. Each level prints p50/p95/p99, req/s, errors, and the CPU per
search read from /proc over the run for the API (with its workers),
PostgreSQL (postmaster and backends) and OpenSearch, and what the stack's
other processes (Dagster, MCP) spent meanwhile.

`--tracing` starts the stack alternately with metrics and tracing off and on
(a Jaeger the bench starts; the stack restarted for each, `--rounds` pairs),
and prints the servers' CPU per search of each and the growth (goal <= 5%).
A running stack cannot be restarted with other settings, so `--tracing` needs
the home's stack stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import psutil

from bench.api_ab import compare, engines_cpu, own_cpu, wait_for_health
from bench.search_load import (
    cpu_line,
    print_tracing_cost,
    process_cpu_seconds,
    scraping,
    tracing_runs,
)
from bench.search_profile import engine_pids
from bench.tenants import SCIFACT, bench_tenant
from bench.wrk import run_wrk, wrk_files
from evals.beir import load_qrels, load_queries
from resources.composition.platform import connect, ensure_engines
from resources.composition.settings import GroundworkSettings
from resources.engines.jaeger import EmbeddedJaeger

#: how long `groundwork up` may take to answer /v1/health (engines, migrations,
#: model load) on a loaded machine
START_SECONDS = 600


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--beir", type=Path, default=SCIFACT)
    parser.add_argument("--split", default="train")
    parser.add_argument("--tenant", help="default: the home's largest tenant by chunks")
    parser.add_argument("--seconds", type=int, default=20, help="wrk seconds per level")
    parser.add_argument(
        "--warmup", type=int, help="wrk seconds before measuring (15; 60 with --tracing)"
    )
    parser.add_argument("--levels", default="1,8,50", help="concurrent connections")
    parser.add_argument(
        "--tracing", action="store_true", help="metrics and tracing off against both on"
    )
    parser.add_argument("--trace-ratio", type=float, default=0.1, help="with --tracing")
    parser.add_argument("--rounds", type=int, default=2, help="with --tracing: off/on pairs")
    parser.add_argument(
        "--against",
        type=Path,
        help="another checkout (with its .venv): its API against this one's, on this stack's "
        "engines, in turn (bench/api_ab.py)",
    )
    parser.add_argument("--pairs", type=int, default=8, help="with --against: ABBA pairs")
    parser.add_argument("--clients", type=int, default=8, help="with --against")
    args = parser.parse_args()
    if args.warmup is None:
        args.warmup = 60 if args.tracing else 15
    return args


@dataclass(frozen=True, slots=True)
class Stack:
    """A running `groundwork up`: its API's base URL and the pids whose CPU is read."""

    base: str
    supervisor: int
    api: int


def running_stack(settings: GroundworkSettings) -> Stack | None:
    """The stack the home's supervisor.json names, if its process is alive."""
    lock = settings.home / "supervisor.json"
    if not lock.exists():
        return None
    info = json.loads(lock.read_text())
    if not psutil.pid_exists(int(info["pid"])):
        return None
    return Stack(info["api"], int(info["pid"]), api_pid(int(info["api"].rsplit(":", 1)[1])))


def api_pid(port: int) -> int:
    """The process listening on the API's port (uvicorn; its workers are its children)."""
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port and conn.pid:
            return conn.pid
    raise RuntimeError(f"nothing listens on port {port}")


@contextmanager
def started_stack(settings: GroundworkSettings, env: dict[str, str]) -> Iterator[Stack]:
    """`groundwork up` with `env` added, until its API answers; Ctrl-C'd after."""
    log = (settings.home / "bench-up.log").open("ab")
    up = subprocess.Popen(
        [str(Path(sys.executable).parent / "groundwork"), "up"],
        env=dict(os.environ, **env),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{settings.api_port}"
    try:
        failure = f"groundwork up did not start: {settings.home}/bench-up.log"
        wait_for_health(base, up, START_SECONDS, failure)
        yield Stack(base, up.pid, api_pid(settings.api_port))
    finally:
        up.send_signal(signal.SIGINT)
        try:
            up.wait(timeout=180)
        except subprocess.TimeoutExpired:
            up.send_signal(signal.SIGINT)  # a second Ctrl-C forces the stop
            up.wait(timeout=60)
        log.close()


def pid_tree(pid: int) -> set[int]:
    try:
        root = psutil.Process(pid)
        return {root.pid, *(c.pid for c in root.children(recursive=True))}
    except psutil.NoSuchProcess:
        return set()


def stack_cpu(stack: Stack, settings: GroundworkSettings) -> dict[str, float]:
    """CPU seconds so far of the API, PostgreSQL, OpenSearch and the stack's
    other processes (the supervisor's tree less those three). PostgreSQL's
    counts what its ended backends left with the postmaster (engines_cpu):
    read as the live backends alone, a connection that closed mid-run (a
    Dagster daemon's, the API's pool shrinking) took its CPU out of the run."""
    engines = engine_pids(settings)
    api = pid_tree(stack.api)
    others = (
        pid_tree(stack.supervisor) - api - set(engines["postgres"]) - set(engines["opensearch"])
    )
    return {"api": own_cpu(api), **engines_cpu(engines), "others": own_cpu(others)}


@dataclass(frozen=True, slots=True)
class Load:
    args: argparse.Namespace
    settings: GroundworkSettings
    tenant: str
    key: str
    files: tuple[Path, Path]


def measure_stack(load: Load, stack: Stack, label: str) -> dict[int, float]:
    """Warm-up, then wrk at each level; the servers' CPU ms per search by level."""
    script, queries = load.files
    args = load.args
    if args.warmup:
        run_wrk(stack.base, 8, args.warmup, script, queries, load.key)
    print(
        f"/v1/search through groundwork up on {load.settings.home}, tenant {load.tenant}, "
        f"{label}, {args.split} queries cycled, query cache warm, wrk {args.seconds} s a level; "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    servers: dict[int, float] = {}
    for connections in (int(c) for c in args.levels.split(",")):
        before = stack_cpu(stack, load.settings)
        result = run_wrk(stack.base, connections, args.seconds, script, queries, load.key)
        after = stack_cpu(stack, load.settings)
        print(
            f"  {connections} client(s): p50 {result['p50_ms']:.1f} ms  p95 {result['p95_ms']:.1f} ms  "
            f"p99 {result['p99_ms']:.1f} ms  {result['rps']:.1f} req/s  errors {result['errors']} "
            f"of {result['requests']:.0f}  (503 {result['refused_503']:.0f})"
        )
        served = max(1.0, result["requests"])
        others = after.pop("others") - before.pop("others")
        print("    " + cpu_line(before, after, result, None))
        print(
            f"    the stack's other processes meanwhile: {others * 1000 / served:.1f} ms per search"
        )
        servers[connections] = sum(after[k] - before[k] for k in before) * 1000 / served
    return servers


def split_queries(folder: Path, split: str) -> list[str]:
    """The split's query texts, shuffled once (the same order every run)."""
    texts = load_queries(folder)
    chosen = [texts[q] for q in load_qrels(folder, split) if q in texts]
    random.Random(5).shuffle(chosen)
    return chosen


def make_load(
    args: argparse.Namespace, settings: GroundworkSettings, files: tuple[Path, Path]
) -> Load | None:
    """The measured tenant and a key for it, from the home's own database
    (engines as the running stack started them: nothing is started here)."""
    managed = replace(settings, engines_managed=True)
    platform = connect(managed, ensure_engines(managed))
    try:
        tenant = bench_tenant(platform.catalog, args.tenant)
        if tenant is None:
            print(f"no tenant {args.tenant or ''} in {settings.home}: ingest a corpus first")
            return None
        _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "search-stack")
        return Load(args, settings, tenant, key, files)
    finally:
        platform.close()


def measure_once(
    args: argparse.Namespace, settings: GroundworkSettings, files: tuple[Path, Path], stack: Stack
) -> int:
    load = make_load(args, settings, files)
    if load is None:
        return 1
    measure_stack(load, stack, "as configured")
    return 0


def measure_against(
    args: argparse.Namespace, settings: GroundworkSettings, files: tuple[Path, Path], stack: Stack
) -> int:
    load = make_load(args, settings, files)
    if load is None:
        return 1
    compare(
        settings,
        stack.api,
        args.against,
        files,
        load.key,
        pairs=args.pairs,
        seconds=args.seconds,
        warmup=args.warmup,
        clients=args.clients,
    )
    return 0


def measure_tracing(
    args: argparse.Namespace, settings: GroundworkSettings, files: tuple[Path, Path]
) -> int:
    """Off and on alternating, the stack restarted with each configuration."""
    jaeger = EmbeddedJaeger(settings.home / "jaeger-bench", otlp_port=4348, query_port=16716)
    jaeger.start()
    try:
        pid = int(jaeger.pid_file.read_text())
        jaeger_before = process_cpu_seconds([pid])
        figures = []
        load: Load | None = None
        for label, env in tracing_runs(args, jaeger, {}):
            with started_stack(settings, env) as stack:
                load = load or make_load(args, settings, files)
                if load is None:
                    return 1
                stop = threading.Event()
                if env.get("GROUNDWORK_METRICS_TOKEN"):
                    threading.Thread(target=scraping, args=(stack.base, stop), daemon=True).start()
                try:
                    figures.append((label, measure_stack(load, stack, label)))
                finally:
                    stop.set()
        print("metrics and tracing, off against on (compare within the run):")
        print_tracing_cost(figures, process_cpu_seconds([pid]) - jaeger_before)
    finally:
        jaeger.stop()
    return 0


def main() -> int:
    args = parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed (Debian: apt-get install wrk)")
        return 1
    settings = GroundworkSettings.from_env()
    running = running_stack(settings)
    if args.tracing and running is not None:
        print(f"--tracing restarts the stack: stop the one running on {settings.home} first")
        return 1
    with wrk_files(split_queries(args.beir, args.split)) as files:
        if args.tracing:
            return measure_tracing(args, settings, files)
        measured = measure_against if args.against is not None else measure_once
        if running is not None:
            return measured(args, settings, files, running)
        with started_stack(settings, {}) as stack:
            return measured(args, settings, files, stack)


if __name__ == "__main__":
    sys.exit(main())
