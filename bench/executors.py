"""Two of Dagster's distributed executors on this machine: dagster-celery
(Redis broker: Debian redis-server, started here under a temporary home on
127.0.0.1 with a password) and dagster-dask (a dask.distributed scheduler and
workers), each with two worker processes pinned to a core each (taskset).

    uv run python bench/executors.py                 # both, 3 repeats
    uv run python bench/executors.py --repeat 5 --executors celery

Per executor it prints:
- start-up cost per step: a chain of ten no-op steps, wall time / 10, and the
  same chain in process for reference;
- throughput: eight independent steps of 1.5 s of CPU each on two workers
  (ideal: 6 s), as steps/s and as the share of the ideal;
- dynamic mapping and a step's retry policy: does a fan-out/collect job
  finish with the right sum; does a step that fails once succeed on its retry;
- a worker killed with SIGKILL in the middle of a 20 s step: does the run
  finish, how long after the kill, and on which worker the step ran again.

Dagster's instance is in the test PostgreSQL (GROUNDWORK_HOME, default
.groundwork-test; a database of its own, dagster_bench_executors). Every
figure is min / median over the repeats; the machine is shared (2 cores,
other work running), so trust only large differences.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from resources.composition.settings import PROJECT_ROOT

ROOT = PROJECT_ROOT
VENV_BIN = Path(sys.executable).parent
REDIS_PORT = 6391
DASK_PORT = 8796
KILL_WAIT_SECONDS = 180.0


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["DAGSTER_HOME"] = str(work / "dagster")
    env["GROUNDWORK_BENCH_PID_DIR"] = str(work / "pids")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _instance_config(work: Path) -> None:
    from resources.composition.platform import ensure_engines
    from resources.composition.settings import GroundworkSettings
    from resources.dagster_glue.instance import dagster_storage_url

    env = dict(os.environ)
    env.setdefault("GROUNDWORK_HOME", str(ROOT / ".groundwork-test"))
    env["GROUNDWORK_KEYWORD_BACKEND"] = "postgres"  # only PostgreSQL is needed
    settings = GroundworkSettings.from_env(env)
    url = dagster_storage_url(ensure_engines(settings).server_url, "dagster_bench_executors")
    home = work / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(
        json.dumps(
            {
                "storage": {"postgres": {"postgres_url": url}},
                "telemetry": {"enabled": False},
            }
        )
    )


class Workers:
    """Two worker processes (and the scheduler or broker they need)."""

    def __init__(self, executor: str, work: Path) -> None:
        self.executor = executor
        self.work = work
        self.env = _env(work)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.extra: list[subprocess.Popen[bytes]] = []
        self.redis: Any = None

    def start(self) -> None:
        if self.executor == "celery":
            from resources.engines.redis import EmbeddedRedis

            self.redis = EmbeddedRedis(self.work / "redis", REDIS_PORT)
            self.env["GROUNDWORK_BROKER_URL"] = self.redis.start()
        else:
            address = f"tcp://127.0.0.1:{DASK_PORT}"
            self.env["GROUNDWORK_DASK_SCHEDULER"] = address
            log = open(self.work / "scheduler.log", "ab")  # noqa: SIM115
            self.extra.append(
                subprocess.Popen(
                    [
                        str(VENV_BIN / "dask"),
                        "scheduler",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(DASK_PORT),
                        "--no-dashboard",
                    ],
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=ROOT,
                )
            )
            time.sleep(3)
        for core, name in enumerate(("w1", "w2")):
            self.start_worker(name, core)
        time.sleep(8 if self.executor == "celery" else 5)

    def start_worker(self, name: str, core: int) -> None:
        log = open(self.work / f"{self.executor}-{name}.log", "ab")  # noqa: SIM115
        if self.executor == "celery":
            command = [sys.executable, "-m", "bench.executors", "celery-worker", name]
        else:
            command = [
                str(VENV_BIN / "dask"),
                "worker",
                self.env["GROUNDWORK_DASK_SCHEDULER"],
                "--nthreads",
                "1",
                "--nworkers",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--name",
                name,
            ]
        self.procs[name] = subprocess.Popen(
            ["taskset", "-c", str(core % (os.cpu_count() or 1)), *command],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,
        )

    def name_of(self, pid: int) -> str | None:
        return next((n for n, p in self.procs.items() if p.pid == pid), None)

    def stop(self) -> None:
        for proc in [*self.procs.values(), *self.extra]:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in [*self.procs.values(), *self.extra]:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.redis is not None:
            self.redis.stop()


def run_job(executor: str, kind: str, env: dict[str, str], timeout: float = 600) -> dict[str, Any]:
    """One run, in a process of its own (as a run worker is), timed from outside."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "bench.executors", "run", executor, kind],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    wall = time.monotonic() - started
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {"success": False, "error": done.stderr[-1500:]}
    result["process_wall"] = wall
    return result


def _run_here(executor: str, kind: str) -> None:
    import dagster as dg

    job = dg.build_reconstructable_job(
        "bench.executor_jobs",
        "job_for",
        reconstructable_args=(executor, kind),  # type: ignore[arg-type]
    )
    with dg.DagsterInstance.get() as instance:
        started = time.monotonic()
        with dg.execute_job(job, instance, raise_on_error=False) as result:
            wall = time.monotonic() - started
            out: dict[str, Any] = {"success": result.success, "run_wall": wall}
            if kind == "dynamic" and result.success:
                out["total"] = result.output_for_node("total")
            if kind == "retry":
                out["retried"] = any(
                    e.event_type_value == "STEP_UP_FOR_RETRY" for e in result.all_events
                )
            if not result.success:
                failures = [e.message for e in result.all_events if e.is_failure]
                out["error"] = " | ".join(str(m) for m in failures)[-800:]
        print(json.dumps(out))


def _stats(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f}"


def measure(executor: str, repeat: int, work: Path) -> dict[str, Any]:
    workers = Workers(executor, work)
    workers.start()
    report: dict[str, Any] = {}
    try:
        chain = [run_job(executor, "chain", workers.env) for _ in range(repeat)]
        fan = [run_job(executor, "fan", workers.env) for _ in range(repeat)]
        report["chain_ok"] = all(r["success"] for r in chain)
        report["per_step"] = [r["run_wall"] / 10 for r in chain if r["success"]]
        report["fan_ok"] = all(r["success"] for r in fan)
        report["fan_wall"] = [r["run_wall"] for r in fan if r["success"]]
        dynamic = run_job(executor, "dynamic", workers.env)
        report["dynamic"] = (
            "yes (sum 6)"
            if dynamic.get("total") == 6
            else f"no: {dynamic.get('error', 'failed')[-300:]}"
        )
        retry = run_job(executor, "retry", workers.env)
        report["retry"] = (
            "yes" if retry["success"] and retry.get("retried") else f"no ({retry})"[:300]
        )
        report["kill"] = [kill_once(executor, workers) for _ in range(max(1, repeat // 2))]
    finally:
        workers.stop()
    return report


def kill_once(executor: str, workers: Workers) -> dict[str, Any]:
    pid_dir = work_pid_dir(workers)
    shutil.rmtree(pid_dir, ignore_errors=True)
    pid_dir.mkdir(parents=True)
    run = subprocess.Popen(
        [sys.executable, "-m", "bench.executors", "run", executor, "long"],
        env=workers.env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not list(pid_dir.glob("attempt-0-*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    first = list(pid_dir.glob("attempt-0-*"))
    if not first:
        run.kill()
        return {"outcome": "the step never started"}
    time.sleep(3)
    pid = int(first[0].name.rsplit("-", 1)[1])
    victim = workers.name_of(pid) or f"pid {pid}"
    os.kill(pid, signal.SIGKILL)
    killed_at = time.monotonic()
    try:
        out, _ = run.communicate(timeout=KILL_WAIT_SECONDS)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        success = bool(lines) and json.loads(lines[-1])["success"]
        outcome = "completed" if success else "failed"
    except subprocess.TimeoutExpired:
        run.kill()
        run.communicate()
        outcome = f"still running {KILL_WAIT_SECONDS:.0f} s after the kill"
    after = time.monotonic() - killed_at
    attempts = sorted(pid_dir.glob("attempt-*"))
    rerun_on = [workers.name_of(int(p.name.rsplit("-", 1)[1])) for p in attempts[1:]]
    # bring the killed worker back for the next measurement
    for name, proc in workers.procs.items():
        if proc.pid == pid:
            proc.wait()
            workers.start_worker(name, 0 if name == "w1" else 1)
            time.sleep(6)
    return {
        "killed": victim,
        "outcome": outcome,
        "seconds_after_kill": round(after, 1),
        "attempts": len(attempts),
        "rerun_on": rerun_on,
    }


def work_pid_dir(workers: Workers) -> Path:
    return Path(workers.env["GROUNDWORK_BENCH_PID_DIR"])


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "celery-worker":
        from resources.dagster_glue.celery_steps import run_worker

        run_worker(os.environ["GROUNDWORK_BROKER_URL"], sys.argv[2], visibility_seconds=30)
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        _run_here(sys.argv[2], sys.argv[3])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--executors", default="celery,dask")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gw-executors-"))
    _instance_config(work)
    env = _env(work)
    reference = [run_job("inprocess", "chain", env)["run_wall"] / 10 for _ in range(args.repeat)]
    print(f"in process: per step {_stats(reference)} s (min / median of {args.repeat})")
    results: dict[str, Any] = {}
    for executor in args.executors.split(","):
        results[executor] = measure(executor, args.repeat, work)
        r = results[executor]
        print(f"\n== {executor} (two workers, one core each)")
        if r["per_step"]:
            print(f"per step (chain of 10 no-op steps): {_stats(r['per_step'])} s")
        if r["fan_wall"]:
            ideal = 8 * 1.5 / 2
            print(
                f"8 steps x 1.5 s CPU: wall {_stats(r['fan_wall'])} s "
                f"(ideal {ideal:.1f} s; best {ideal / min(r['fan_wall']):.0%} of ideal)"
            )
        print(f"dynamic mapping: {r['dynamic']}")
        print(f"retry policy: {r['retry']}")
        for kill in r["kill"]:
            print(f"kill -9 mid-step: {kill}")
    (work / "results.json").write_text(json.dumps(results, indent=2))
    print(f"\nraw: {work / 'results.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
