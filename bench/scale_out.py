"""Scale-out of one tenant's ingest: the distributed job (tenant_ingest_distributed,
Dagster's Celery executor) on one and on two `groundwork worker` processes
pinned to a core each, against the single-host job (tenant_ingest, in process)
pinned to one core; and a small tenant through both paths.

    uv run python bench/scale_out.py --docs 400            # a check
    uv run python bench/scale_out.py --docs 20000          # the issue's tier (hours here)
    uv run python bench/scale_out.py --docs 400 --kill-only [--visibility 60]

`--kill` adds, and `--kill-only` runs alone, one more two-worker run of a
fresh tenant in which one worker is killed with SIGKILL in the middle of the
first shard it runs: the broker hands the shard to the other worker once its
visibility timeout (`--visibility`, the workers' GROUNDWORK_STEP_VISIBILITY_SECONDS)
has passed since delivery, since Redis cannot see a consumer die. It prints the
run's wall time, the recovery (kill -> the shard started again, and -> it
succeeded), and what the stores hold: documents published, vector rows against
live chunk ids, keyword documents against live chunk ids, the stores_agree
check (0 lost, 0 twice).

Documents are SciFact abstracts (../shared/data/scifact; recombined beyond
5,183 as bench/pipeline_tier.py does), registered into object storage (the
test SeaweedFS) for a fresh tenant per configuration, then run from
extraction to publication. Shards: GROUNDWORK_SHARD_VERSIONS = docs / 8, so
two workers have several shards each. Engines: the test engines under
GROUNDWORK_HOME (default .groundwork-test), database groundwork_scale, index
prefix gwscale; Redis started here; all stopped at the end unless
GROUNDWORK_KEEP_ENGINES=1, as after a test session. The machine is shared: figures are
single runs, and only large differences mean anything.

The small tenant is measured three ways: tenant_ingest, the distributed job
itself on two workers, and the path the routing rule
(groundwork/services/ingest_routing.py) picks for it with workers
configured (tenant_ingest below one shard's versions). Each run's per-stage
table follows: Dagster's step durations (mapped steps summed) and, inside the
shards, each stage's seconds from the shards' reports.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.pipeline_tier import DEFAULT_CORPUS, tier_corpus
from groundwork.services.ingest_routing import DISTRIBUTED_JOB, ingest_job
from resources.composition.platform import Platform, connect, ensure_engines
from resources.composition.settings import PROJECT_ROOT, GroundworkSettings
from resources.engines.redis import EmbeddedRedis
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from testbed.engine_lease import EngineLease
from testbed.worker_faults import celery_worker_of, first_shard_on_a_worker
from testbed.worker_process import start_worker_process

DATABASE = "groundwork_scale"
PREFIX = "gwscale"
BUCKET = "groundwork-bench"
REDIS_PORT = 6397
S3_PORT = 8343  # the test SeaweedFS (tests/conftest.py), reused when running


def settings_for_bench() -> GroundworkSettings:
    env = dict(os.environ)
    env.setdefault("GROUNDWORK_HOME", str(PROJECT_ROOT / ".groundwork-test"))
    env.setdefault("GROUNDWORK_OPENSEARCH_PORT", "9211")
    env.setdefault("GROUNDWORK_OPENSEARCH_TRANSPORT_PORT", "9311")
    return GroundworkSettings.from_env(env)


def distributed_job(database: str, index_prefix: str) -> Any:
    """The reconstructable target the workers load the job from."""
    from pipelines.definitions import build_definitions
    from resources.dagster_glue.platform_resource import GroundworkResource

    return build_definitions(
        GroundworkResource(database=database, index_prefix=index_prefix)
    ).resolve_job_def("tenant_ingest_distributed")


def _run_here(kind: str, tenant: str) -> None:
    import dagster as dg

    from pipelines.definitions import build_definitions
    from resources.dagster_glue.platform_resource import GroundworkResource

    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("tenant", [tenant])
        started = time.monotonic()
        if kind == "single":
            job = build_definitions(
                GroundworkResource(database=DATABASE, index_prefix=PREFIX)
            ).resolve_job_def("tenant_ingest")
            done = job.execute_in_process(partition_key=tenant, instance=instance)
            success, events = done.success, list(done.all_events)
        else:
            recon = dg.build_reconstructable_job(
                "bench.scale_out",
                "distributed_job",
                reconstructable_args=(DATABASE, PREFIX),  # type: ignore[arg-type]
                reconstructor_working_directory=str(PROJECT_ROOT),
            )
            with dg.execute_job(
                recon, instance, tags={"dagster/partition": tenant}, raise_on_error=False
            ) as result:
                success, events = result.success, list(result.all_events)
        wall = time.monotonic() - started
        checks = {
            e.asset_check_evaluation_data.check_name: e.asset_check_evaluation_data.passed
            for e in events
            if e.event_type_value == "ASSET_CHECK_EVALUATION"
        }
        print(
            json.dumps(
                {
                    "success": success,
                    "wall": wall,
                    "stages": stage_seconds(events),
                    "checks": checks,
                }
            )
        )


def stage_seconds(events: list[Any]) -> dict[str, float]:
    """Where a run's time went: each step's own duration (Dagster's
    STEP_SUCCESS), mapped steps summed under their op's name, and inside the
    shards each stage's seconds from their reports (`shard: extract` ...)."""
    seconds: dict[str, float] = {}
    for event in events:
        key = str(event.step_key or "").split("[")[0]
        if event.event_type_value == "STEP_SUCCESS":
            duration = event.event_specific_data.duration_ms / 1000
            seconds[f"step {key}"] = seconds.get(f"step {key}", 0.0) + duration
        elif event.event_type_value == "STEP_OUTPUT" and key.endswith("ingest_shard"):
            for name, value in event.event_specific_data.metadata.items():
                if name.endswith("_seconds"):
                    stage = f"  shards: {name.removesuffix('_seconds')}"
                    seconds[stage] = seconds.get(stage, 0.0) + float(value.value)
    return seconds


class Bench:
    def __init__(self, settings: GroundworkSettings, work: Path) -> None:
        self.work = work
        self.lease = EngineLease(settings.home)
        engines = ensure_engines(replace(settings, keyword_backend="opensearch"))
        self.engines = engines
        self.seaweedfs = EmbeddedSeaweedFS(settings.home / "seaweedfs", S3_PORT)
        self.seaweedfs.start()
        credentials = self.seaweedfs.credentials
        prefix = f"scale-{uuid.uuid4().hex[:8]}"
        s3 = replace(
            settings,
            blob_backend="s3",
            s3_endpoint=self.seaweedfs.endpoint,
            s3_bucket=BUCKET,
            s3_prefix=prefix,
            s3_access_key_id=credentials.access_key_id,
            s3_secret_access_key=credentials.secret_access_key,
        )
        self.platform: Platform = connect(s3, engines, database=DATABASE, index_prefix=PREFIX)
        self.redis = EmbeddedRedis(work / "redis", REDIS_PORT)
        assert engines.opensearch_url is not None
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDWORK_")}
        self.env.update(
            {
                "GROUNDWORK_DATABASE_URL": engines.server_url,
                "GROUNDWORK_OPENSEARCH_URL": engines.opensearch_url,
                "GROUNDWORK_BLOB_BACKEND": "s3",
                "GROUNDWORK_S3_ENDPOINT": self.seaweedfs.endpoint,
                "GROUNDWORK_S3_BUCKET": BUCKET,
                "GROUNDWORK_S3_PREFIX": prefix,
                "GROUNDWORK_S3_ACCESS_KEY_ID": credentials.access_key_id,
                "GROUNDWORK_S3_SECRET_ACCESS_KEY": credentials.secret_access_key,
                "GROUNDWORK_BROKER_URL": self.redis.start(),
                "DAGSTER_HOME": str(work / "dagster"),
                "PYTHONUNBUFFERED": "1",
            }
        )
        from resources.dagster_glue.instance import dagster_storage_url

        (work / "dagster").mkdir()
        url = dagster_storage_url(engines.server_url, "dagster_scale")
        (work / "dagster" / "dagster.yaml").write_text(
            json.dumps(
                {"storage": {"postgres": {"postgres_url": url}}, "telemetry": {"enabled": False}}
            )
        )
        self.workers: list[subprocess.Popen[bytes]] = []

    def tenant(self, corpus: dict[str, str]) -> str:
        from groundwork.stages.registration import register_file

        tenant = f"scale-{uuid.uuid4().hex[:8]}"
        catalog = self.platform.catalog
        catalog.ensure_tenant(tenant, tenant, self.platform.settings.default_model_key)
        for name, text in corpus.items():
            register_file(
                catalog,
                self.platform.blobs,
                tenant_id=tenant,
                origin=f"api:{name}",
                filename=name,
                data=text.encode(),
                subjects=[f"tenant:{tenant}"],
                media_type="text/markdown",
            )
        return tenant

    def start_workers(
        self, cores: list[int], shard_versions: int, visibility: int | None = None
    ) -> None:
        extra = {"GROUNDWORK_STEP_VISIBILITY_SECONDS": str(visibility)} if visibility else {}
        for core in cores:
            name = f"core{core}"
            home = self.work / f"host-{name}-{uuid.uuid4().hex[:4]}"
            self.workers.append(
                start_worker_process(
                    name,
                    {
                        **self.env,
                        "GROUNDWORK_SHARD_VERSIONS": str(shard_versions),
                        **extra,
                    },
                    home,
                    DATABASE,
                    PREFIX,
                    prefix=["taskset", "-c", str(core)],
                )
            )
            deadline = time.monotonic() + 300
            while " ready." not in (home / "worker.log").read_text(errors="replace"):
                if time.monotonic() > deadline or self.workers[-1].poll() is not None:
                    raise SystemExit(f"worker {name} did not start: see {home / 'worker.log'}")
                time.sleep(0.5)

    def stop_workers(self) -> None:
        for proc in self.workers:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.workers:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.workers = []

    def run(self, kind: str, tenant: str, pin: int | None = None) -> float:
        return self.run_with_stages(kind, tenant, pin)[0]

    def run_with_stages(
        self, kind: str, tenant: str, pin: int | None = None
    ) -> tuple[float, dict[str, float]]:
        wall, stages, _ = self.run_with_checks(kind, tenant, pin)
        return wall, stages

    def run_with_checks(
        self, kind: str, tenant: str, pin: int | None = None
    ) -> tuple[float, dict[str, float], dict[str, bool]]:
        command = [sys.executable, "-m", "bench.scale_out", "run", kind, tenant]
        if pin is not None:
            command = ["taskset", "-c", str(pin), *command]
        env = {**self.env, "GROUNDWORK_HOME": str(self.work / "run-host")}
        if kind == "single":
            # the single-host job reads the same stores by the same URLs
            env["GROUNDWORK_KEYWORD_BACKEND"] = "opensearch"
        done = subprocess.run(command, env=env, cwd=PROJECT_ROOT, capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if not lines or not json.loads(lines[-1])["success"]:
            raise SystemExit(f"{kind} run failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        last = json.loads(lines[-1])
        return float(last["wall"]), dict(last["stages"]), dict(last.get("checks", {}))

    def run_with_a_kill(self, tenant: str, mid_shard: float) -> dict[str, Any]:
        """The distributed run of `tenant` on the running workers, one of
        them SIGKILLed `mid_shard` seconds into the first shard it runs;
        then what the run and the stores say."""
        import dagster as dg

        instance = dg.DagsterInstance.from_config(str(self.work / "dagster"))
        names = {f"core{n}": proc for n, proc in enumerate(self.workers)}
        killed: dict[str, Any] = {}

        def kill_the_first_shard_worker() -> None:
            deadline = time.monotonic() + 1800
            while time.monotonic() < deadline and not killed:
                found = first_shard_on_a_worker(instance, tenant)
                if found is not None and found[2] in names:
                    run_id, step, name = found
                    time.sleep(mid_shard)
                    os.killpg(names[name].pid, signal.SIGKILL)
                    killed.update(step=step, worker=name, at=time.time(), run=run_id)
                    return
                time.sleep(0.3)

        watcher = threading.Thread(target=kill_the_first_shard_worker, daemon=True)
        watcher.start()
        wall, _, checks = self.run_with_checks("distributed", tenant)
        watcher.join(5)
        if not killed:
            raise SystemExit("no shard started on a worker: nothing was killed")
        # the killed shard's events after the kill: handed out again, succeeded
        after = [
            e
            for e in instance.all_logs(killed["run"])
            if e.step_key == killed["step"] and e.timestamp > killed["at"]
        ]
        again = next((e for e in after if celery_worker_of(e)), None)
        done = next(
            (
                e
                for e in after
                if e.dagster_event and e.dagster_event.event_type_value == "STEP_SUCCESS"
            ),
            None,
        )
        model = self.platform.settings.default_model_key
        live = self.platform.catalog.live_chunk_ids(tenant, model)
        with self.platform.pool.connection() as conn:
            row = conn.execute(
                f"SELECT count(*), count(DISTINCT source_id) FILTER (WHERE live),"  # noqa: S608
                f" count(*) FILTER (WHERE live) FROM embeddings_{model} WHERE tenant_id = %s",
                (tenant,),
            ).fetchone()
        assert row is not None
        keyword_ids = self.platform.keywords.chunk_ids(tenant, live_only=False)
        return {
            "wall": wall,
            "killed": f"{killed['worker']} in {killed['step']}",
            "handed out again after": (again.timestamp - killed["at"]) if again else None,
            "again on": celery_worker_of(again) if again else None,
            "recovered after": (done.timestamp - killed["at"]) if done else None,
            "waiting to publish": len(self.platform.catalog.versions_to_publish(tenant, model)),
            "documents published": int(row[1]),
            "vector rows": int(row[0]),
            "vector rows live": int(row[2]),
            "live chunk ids": len(live),
            "keyword documents": len(keyword_ids),
            "keyword ids == live ids": keyword_ids == live,
            "checks": checks,
        }

    def close(self) -> None:
        """Workers and broker; then, as a test session does, the engines under
        GROUNDWORK_HOME unless GROUNDWORK_KEEP_ENGINES=1 or a test session still
        uses them (testbed/engine_lease.py). Left running, the test home's
        OpenSearch and SeaweedFS held their ports against the next test run's,
        a clean clone's included."""
        self.stop_workers()
        self.redis.stop()
        self.platform.close()
        if os.environ.get("GROUNDWORK_KEEP_ENGINES") != "1" and self.lease.last_out():
            self.seaweedfs.stop()
            if self.engines.opensearch is not None:
                self.engines.opensearch.stop()
            if self.engines.postgres is not None:
                self.engines.postgres.stop()
        self.lease.release()


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        _run_here(sys.argv[2], sys.argv[3])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--small", type=int, default=10)
    parser.add_argument("--beir", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--kill", action="store_true", help="add the kill -9 run")
    parser.add_argument("--kill-only", action="store_true", help="only the kill -9 run")
    parser.add_argument(
        "--visibility", type=int, default=60, help="the workers' visibility timeout, with a kill"
    )
    args = parser.parse_args()
    if not (args.beir / "corpus.jsonl").is_file():
        print(f"skipped: no SciFact corpus at {args.beir}")
        return 0
    from evals.beir import load_corpus

    abstracts = list(load_corpus(args.beir))
    corpus = tier_corpus(abstracts, args.docs)
    small = dict(list(tier_corpus(abstracts, args.small).items()))
    shard_versions = max(1, args.docs // 8)
    work = Path(tempfile.mkdtemp(prefix="gw-scale-"))
    started_load = os.getloadavg()
    bench = Bench(settings_for_bench(), work)
    figures: dict[str, float] = {}
    stages: dict[str, dict[str, float]] = {}

    def measure(name: str, kind: str, tenant: str, pin: int | None = None) -> None:
        figures[name], stages[name] = bench.run_with_stages(kind, tenant, pin)

    if args.kill_only:
        try:
            killed = kill_run(bench, corpus, shard_versions, args.visibility, None)
        finally:
            bench.close()
        print_kill(args.docs, shard_versions, args.visibility, killed)
        return 0
    try:
        measure("single host, 1 core", "single", bench.tenant(corpus), pin=0)
        measure("small: single host", "single", bench.tenant(small), pin=0)
        bench.start_workers([0], shard_versions)
        measure("distributed, 1 worker (core 0)", "distributed", bench.tenant(corpus))
        bench.stop_workers()
        bench.start_workers([0, 1], shard_versions)
        measure("distributed, 2 workers (cores 0, 1)", "distributed", bench.tenant(corpus))
        measure("small: distributed job, 2 workers", "distributed", bench.tenant(small))
        # the path the routing rule sends a small tenant down with workers configured
        tenant = bench.tenant(small)
        waiting = bench.platform.catalog.pending_work(
            tenant, bench.platform.settings.default_model_key
        )
        routed = ingest_job(waiting, shard_versions, distributed=True)
        kind = "distributed" if routed == DISTRIBUTED_JOB else "single"
        measure(f"small: routed ({routed})", kind, tenant, pin=0 if kind == "single" else None)
        if args.kill:
            shards = stages["distributed, 2 workers (cores 0, 1)"].get("step ingest_shard", 0.0)
            killed = kill_run(bench, corpus, shard_versions, args.visibility, shards / 8)
    finally:
        bench.close()
    print(
        f"load average at the start: {' '.join(f'{x:.2f}' for x in started_load)}\n"
        f"scale-out: {args.docs} documents, shards of {shard_versions} versions; "
        f"small tenant {args.small} files; shared 2-core machine, single runs"
    )
    for name, wall in figures.items():
        docs = args.small if name.startswith("small") else args.docs
        print(f"  {name:40s} {wall:8.1f} s  {docs / wall:7.2f} documents/s")
    one = figures["distributed, 1 worker (core 0)"]
    two = figures["distributed, 2 workers (cores 0, 1)"]
    print(f"  two workers / one worker: {one / two:.2f}x the documents/s (goal >= 1.8x)")
    small_single = figures["small: single host"]
    ratio = figures["small: distributed job, 2 workers"] / small_single
    print(f"  small tenant, distributed job / single host wall: {ratio:.2f}x")
    [routed_name] = [name for name in figures if name.startswith("small: routed")]
    ratio = figures[routed_name] / small_single
    print(f"  small tenant, routed / single host wall: {ratio:.2f}x (goal <= 1.5x)")
    print(
        "per stage (s; step durations summed over mapped steps, shard stages from their reports):"
    )
    names = list(figures)
    rows = sorted({row for table in stages.values() for row in table})
    print("  " + f"{'':34s}" + "".join(f"{i + 1:>9d}" for i in range(len(names))))
    for row in rows:
        cells = "".join(f"{stages[n].get(row, 0.0):9.1f}" for n in names)
        print(f"  {row:34s}{cells}")
    for i, name in enumerate(names):
        print(f"  {i + 1}: {name}")
    print(f"  load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.kill:
        print_kill(args.docs, shard_versions, args.visibility, killed)
    return 0


def kill_run(
    bench: Bench,
    corpus: dict[str, str],
    shard_versions: int,
    visibility: int,
    shard_seconds: float | None,
) -> dict[str, Any]:
    """Two workers started afresh with the visibility timeout, and one of
    them killed half a shard into its first (a shard's mean time from the
    two-worker run, or 5 s when there was none)."""
    bench.stop_workers()
    bench.start_workers([0, 1], shard_versions, visibility)
    return bench.run_with_a_kill(bench.tenant(corpus), (shard_seconds or 10.0) / 2)


def print_kill(docs: int, shard_versions: int, visibility: int, killed: dict[str, Any]) -> None:
    print(
        f"kill -9 of a worker mid-shard: {docs} documents, shards of {shard_versions} versions, "
        f"two workers (cores 0, 1), visibility timeout {visibility} s"
    )
    for name, value in killed.items():
        shown = f"{value:.1f} s" if isinstance(value, float) else value
        print(f"  {name:28s} {shown}")
    lost = docs - int(killed["documents published"])
    twice = int(killed["vector rows"]) - int(killed["live chunk ids"])
    print(
        f"  lost documents {lost}, vector rows beyond the live chunks {twice}, "
        f"keyword documents beyond them {int(killed['keyword documents']) - int(killed['live chunk ids'])}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
