"""Two commits' APIs on one running stack's engines, measured in turn.

    uv run python bench/search_stack.py --against <checkout> [--pairs 8] [--seconds 15]

Restarting `groundwork up` for each side of an A/B (as `--tracing` must) moves
the figures more than most changes do: each start is a new OpenSearch JIT and
new caches, and this machine's speed drifts by 10-20% over minutes. Here both
sides are API processes (`uvicorn retrieval_api.main:app`, the environment the
stack gave its own) started side by side against the same engines and warmed
alike; wrk then drives one, then the other, in ABBA order, for `--pairs`
pairs. Each run prints the servers' CPU per search (the side's API process,
PostgreSQL, OpenSearch); the summary gives each side's median and the median
of the pair-by-pair ratios, which is what to quote: a pair's two runs are
minutes apart, so the machine's drift cancels within it.

`<checkout>` is another work tree with its own environment (`git worktree add
/tmp/base <commit>`, then `uv sync --frozen` in it); the stack's home and
engines are shared, so both sides must read the same schema (a migration
between the commits is not comparable this way).
"""

from __future__ import annotations

import socket
import statistics
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

from bench.search_profile import engine_pids
from bench.wrk import run_wrk
from resources.composition.settings import GroundworkSettings

ROOT = Path(__file__).resolve().parents[1]
#: how long an API process may take to answer /v1/health (model load)
START_SECONDS = 120


@dataclass(frozen=True, slots=True)
class Side:
    label: str
    base: str
    pid: int


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_health(
    base: str, process: subprocess.Popen[bytes], seconds: float, failure: str
) -> None:
    """Until `base` answers /v1/health; `failure` raised if `process` ends first
    or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(failure)
        try:
            if httpx.get(f"{base}/v1/health", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)


def stack_environment(api_pid: int) -> dict[str, str]:
    """The environment the stack started its API with (its home, engines and
    ports), read from /proc: a second API then serves the same platform."""
    raw = Path(f"/proc/{api_pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


@contextmanager
def api_process(label: str, checkout: Path, env: dict[str, str], log: Path) -> Iterator[Side]:
    """`checkout`'s API on a free port until it answers its health check; stopped after."""
    port = free_port()
    uvicorn = checkout / ".venv" / "bin" / "uvicorn"
    if not uvicorn.exists():
        raise SystemExit(f"no {uvicorn}: run `uv sync --frozen` in {checkout} first")
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(uvicorn), "retrieval_api.main:app", "--host", "127.0.0.1", "--port", str(port)]
            + ["--workers", "1", "--log-level", "warning"],
            cwd=checkout,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(base, process, START_SECONDS, f"the API of {checkout} did not start: {log}")
        yield Side(label, base, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def own_cpu(pids: list[int] | set[int]) -> float:
    """CPU seconds of exactly these processes (no children added)."""
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def engines_cpu(pids: dict[str, list[int]]) -> dict[str, float]:
    """PostgreSQL's CPU as the postmaster's own, its live backends' and what
    the backends that ended left in its children's count (a backend of another
    process that disconnects mid-run takes its CPU along otherwise, and the
    run reads less than nothing); OpenSearch's JVM. `pids`: engine_pids'."""
    postgres = 0.0
    if pids["postgres"]:
        postmaster, *backends = pids["postgres"]
        try:
            times = psutil.Process(postmaster).cpu_times()
            postgres = times.user + times.system + times.children_user + times.children_system
        except psutil.NoSuchProcess:
            pass
        postgres += own_cpu(backends)
    return {"postgres": postgres, "opensearch": own_cpu(pids["opensearch"])}


def measure(
    side: Side,
    settings: GroundworkSettings,
    files: tuple[Path, Path],
    key: str,
    seconds: int,
    clients: int,
) -> dict[str, float]:
    """One wrk run against `side`: CPU ms per search of its API, PostgreSQL and
    OpenSearch, and the run's latency and rate."""
    before = {"api": own_cpu([side.pid]), **engines_cpu(engine_pids(settings))}
    result = run_wrk(side.base, clients, seconds, files[0], files[1], key)
    after = {"api": own_cpu([side.pid]), **engines_cpu(engine_pids(settings))}
    served = max(1.0, result["requests"])
    figures = {name: (after[name] - before[name]) * 1000 / served for name in before}
    figures["servers"] = sum(figures.values())
    return {**figures, **result}


def compare(
    settings: GroundworkSettings,
    stack_api_pid: int,
    against: Path,
    files: tuple[Path, Path],
    key: str,
    *,
    pairs: int,
    seconds: int,
    warmup: int,
    clients: int,
) -> None:
    env = stack_environment(stack_api_pid)
    log = settings.home / "bench-api-ab.log"
    with ExitStack() as stack:
        here = stack.enter_context(api_process("this checkout", ROOT, env, log))
        there = stack.enter_context(api_process(str(against), against.resolve(), env, log))
        sides = (here, there)
        for side in sides:  # each process has its own query cache to fill
            run_wrk(side.base, 8, warmup, files[0], files[1], key)
        runs: dict[str, list[dict[str, float]]] = {here.label: [], there.label: []}
        print(
            f"/v1/search, two APIs on the engines of {settings.home}: this checkout against "
            f"{against}; {pairs} pairs of {seconds} s at {clients} clients, ABBA order"
        )
        for n in range(pairs):
            for side in sides if n % 2 == 0 else sides[::-1]:
                run = measure(side, settings, files, key, seconds, clients)
                runs[side.label].append(run)
                print(
                    f"  {side.label}: servers {run['servers']:.1f} ms per search (API "
                    f"{run['api']:.1f}, PostgreSQL {run['postgres']:.1f}, OpenSearch "
                    f"{run['opensearch']:.1f}); p95 {run['p95_ms']:.1f} ms, "
                    f"{run['rps']:.1f} req/s, errors {run['errors']:.0f}"
                )
        for label, side_runs in runs.items():
            med = {
                name: statistics.median(r[name] for r in side_runs)
                for name in ("servers", "api", "postgres", "opensearch", "p95_ms", "rps")
            }
            print(
                f"{label}, medians: servers {med['servers']:.2f} ms (API {med['api']:.2f}, "
                f"PostgreSQL {med['postgres']:.2f}, OpenSearch {med['opensearch']:.2f}); "
                f"p95 {med['p95_ms']:.1f} ms, {med['rps']:.1f} req/s"
            )
        ratios = [
            a["servers"] / b["servers"]
            for a, b in zip(runs[here.label], runs[there.label], strict=True)
            if b["servers"]
        ]
        print(
            f"this checkout / {against}: servers' CPU per search, median of the pairs' ratios "
            f"{statistics.median(ratios):.3f} (pairs: {', '.join(f'{r:.2f}' for r in ratios)})"
        )
