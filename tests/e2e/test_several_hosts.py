"""Faults on several hosts: two `groundwork worker` processes, each with a home
of its own and only URLs (PostgreSQL, OpenSearch, S3, the broker), run the
distributed ingest job's steps through Dagster's Celery executor (Redis,
started by the project with a password). One worker is killed with SIGKILL in
the middle of an indexing shard: the broker hands the shard to the other
worker, the run completes, the stores agree, no vector or keyword row exists
twice, and the tenant's versions were published together, after every shard.

Network namespaces of their own were not used: the embedded PostgreSQL of the
test engines listens on a Unix socket only and the other engines on
127.0.0.1, which a new namespace cannot reach without veth plumbing and
engines listening beyond loopback (docs/several-hosts.md says what is left).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import dagster as dg
import pytest

from resources.composition.platform import EngineEndpoints, Platform
from resources.composition.settings import PROJECT_ROOT
from resources.dagster_glue.instance import dagster_storage_url
from resources.engines.redis import EmbeddedRedis
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from testbed.tenants import seed_tenant
from testbed.worker_faults import celery_worker_of, first_shard_on_a_worker
from tests.conftest import TEST_DATABASE, TEST_S3_BUCKET

REDIS_PORT = 6395
VISIBILITY_SECONDS = 15
SHARD_VERSIONS = 12
DOCUMENTS = 36
WORDS = [
    "river",
    "stone",
    "harbor",
    "lantern",
    "meadow",
    "copper",
    "signal",
    "orbit",
    "canyon",
    "ember",
    "glacier",
    "mosaic",
    "falcon",
    "willow",
    "quartz",
    "prairie",
    "thunder",
    "velvet",
    "beacon",
    "cedar",
    "tundra",
    "saffron",
    "comet",
    "delta",
]


def _document(n: int) -> str:
    sentences = []
    for s in range(24):
        words = [WORDS[(n * 7 + s * 3 + k * 5) % len(WORDS)] for k in range(14)]
        sentences.append(" ".join(words).capitalize() + f" (note {n}.{s}).")
    return f"# Field notes {n}\n\n" + "\n\n".join(
        " ".join(sentences[i : i + 4]) for i in range(0, len(sentences), 4)
    )


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    redis = EmbeddedRedis(tmp_path / "redis", REDIS_PORT)
    redis.start()
    yield redis
    redis.stop()


def _worker_env(
    platform: Platform, engines: EngineEndpoints, seaweedfs: EmbeddedSeaweedFS, broker_url: str
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDWORK_")}
    credentials = seaweedfs.credentials
    assert engines.opensearch_url is not None
    env.update(
        {
            "GROUNDWORK_DATABASE_URL": engines.server_url,
            "GROUNDWORK_OPENSEARCH_URL": engines.opensearch_url,
            "GROUNDWORK_BLOB_BACKEND": "s3",
            "GROUNDWORK_S3_ENDPOINT": seaweedfs.endpoint,
            "GROUNDWORK_S3_BUCKET": TEST_S3_BUCKET,
            "GROUNDWORK_S3_PREFIX": platform.settings.s3_prefix,
            "GROUNDWORK_S3_ACCESS_KEY_ID": credentials.access_key_id,
            "GROUNDWORK_S3_SECRET_ACCESS_KEY": credentials.secret_access_key,
            "GROUNDWORK_BROKER_URL": broker_url,
            "GROUNDWORK_STEP_VISIBILITY_SECONDS": str(VISIBILITY_SECONDS),
            "GROUNDWORK_SHARD_VERSIONS": str(SHARD_VERSIONS),
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _start_worker(
    name: str,
    env: dict[str, str],
    home: Path,
    index_prefix: str,
    prefix: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """A `groundwork worker` process; `prefix` runs it inside something, such
    as a network namespace of its own (testbed/netns.py)."""
    home.mkdir(parents=True)
    log = open(home / "worker.log", "wb")  # noqa: SIM115
    return subprocess.Popen(
        [
            *prefix,
            sys.executable,
            "-m",
            "groundwork_cli.main",
            "worker",
            "--name",
            name,
            "--database",
            TEST_DATABASE,
            "--index-prefix",
            index_prefix,
        ],
        env={**env, "GROUNDWORK_HOME": str(home)},
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=PROJECT_ROOT,
        start_new_session=True,
    )


def _wait_ready(workers: dict[str, subprocess.Popen[bytes]], homes: dict[str, Path]) -> None:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        logs = {n: (homes[n] / "worker.log").read_text(errors="replace") for n in workers}
        for name, proc in workers.items():
            assert proc.poll() is None, f"worker {name} exited:\n{logs[name][-3000:]}"
        if all(" ready." in text for text in logs.values()):
            return
        time.sleep(0.5)
    raise AssertionError("the workers did not connect to the broker")


def test_a_worker_killed_mid_shard_loses_and_duplicates_nothing(
    s3_platform: Platform,
    engines: EngineEndpoints,
    seaweedfs: EmbeddedSeaweedFS,
    index_prefix: str,
    broker: EmbeddedRedis,
    tmp_path: Path,
) -> None:
    platform = s3_platform
    tenant = seed_tenant(
        platform, "hosts", {f"notes-{n}.md": _document(n) for n in range(DOCUMENTS)}
    )

    env = _worker_env(platform, engines, seaweedfs, broker.url)
    homes = {name: tmp_path / f"host-{name}" for name in ("w1", "w2")}
    workers = {name: _start_worker(name, env, homes[name], index_prefix) for name in homes}
    try:
        _wait_ready(workers, homes)
        dagster_home = tmp_path / "dagster"
        dagster_home.mkdir()
        url = dagster_storage_url(engines.server_url, "dagster_test_hosts")
        (dagster_home / "dagster.yaml").write_text(
            json.dumps(
                {"storage": {"postgres": {"postgres_url": url}}, "telemetry": {"enabled": False}}
            )
        )
        os.environ["GROUNDWORK_BROKER_URL"] = broker.url
        instance = dg.DagsterInstance.from_config(str(dagster_home))
        instance.add_dynamic_partitions("tenant", [tenant])
        killed: dict[str, str] = {}

        def kill_the_first_shard_worker() -> None:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and not killed:
                found = first_shard_on_a_worker(instance, tenant)
                if found is not None:
                    _, step, name = found
                    time.sleep(1.0)  # inside the shard: models are loaded, writing began
                    os.killpg(workers[name].pid, signal.SIGKILL)
                    killed.update(step=step, worker=name)
                    return
                time.sleep(0.2)

        watcher = threading.Thread(target=kill_the_first_shard_worker, daemon=True)
        watcher.start()
        job = dg.build_reconstructable_job(
            "tests.e2e.distributed_jobs",
            "distributed_ingest",
            reconstructable_args=(index_prefix,),
            reconstructor_working_directory=str(PROJECT_ROOT),
        )
        started = time.monotonic()
        with dg.execute_job(
            job, instance, tags={"dagster/partition": tenant}, raise_on_error=False
        ) as result:
            wall = time.monotonic() - started
            run_id = result.run_id
            assert killed, "no shard started on a worker"
            assert result.success, [e.message for e in result.all_events if e.is_failure]
            checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
        watcher.join(5)
    finally:
        os.environ.pop("GROUNDWORK_BROKER_URL", None)
        for proc in workers.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in workers.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    # the killed shard ran again, on the other worker
    logs = instance.all_logs(run_id)
    ran_on = [celery_worker_of(e) for e in logs if e.step_key == killed["step"]]
    ran_on = [n for n in ran_on if n]
    survivor = "w2" if killed["worker"] == "w1" else "w1"
    assert ran_on[0] == killed["worker"] and survivor in ran_on[1:], ran_on
    # several shards, and every one finished before the one publication began
    order = [
        (e.step_key, e.dagster_event.event_type_value)
        for e in logs
        if e.dagster_event and e.dagster_event.event_type_value in ("STEP_SUCCESS", "STEP_START")
    ]
    shard_successes = [
        i for i, (k, t) in enumerate(order) if "ingest_shard[" in (k or "") and t == "STEP_SUCCESS"
    ]
    publication_start = next(
        i for i, (k, t) in enumerate(order) if k == "serving_index" and t == "STEP_START"
    )
    assert len(shard_successes) == 3 and max(shard_successes) < publication_start
    assert checks["stores_agree"] is True
    # each shard ran in a worker's own process, where the platform and model
    # were loaded once at start (solo pool: no child forked per step)
    shard_pids = {
        e.dagster_event.event_specific_data.metadata["pid"].value  # type: ignore[union-attr]
        for e in logs
        if e.dagster_event
        and e.dagster_event.event_type_value == "STEP_OUTPUT"
        and "ingest_shard[" in (e.step_key or "")
    }
    assert shard_pids and shard_pids <= {proc.pid for proc in workers.values()}, shard_pids
    for name, home in homes.items():
        assert (home / "worker.log").read_text(errors="replace").count("loaded (pid") == 1, name

    # no document lost, none twice
    model = platform.settings.default_model_key
    live = platform.catalog.live_chunk_ids(tenant, model)
    published = {v.source_id for v in platform.catalog.versions_to_publish(tenant, model)}
    assert not published  # nothing left waiting
    assert len(live) >= DOCUMENTS
    table = f"embeddings_{model}"
    with platform.pool.connection() as conn:
        row = conn.execute(
            f"SELECT count(*), count(DISTINCT chunk_id) FROM {table} WHERE tenant_id = %s",  # noqa: S608
            (tenant,),
        ).fetchone()
    assert row is not None and row[0] == row[1] == len(live)
    keyword_ids = platform.keywords.chunk_ids(tenant, live_only=False)
    assert keyword_ids == live
    print(f"distributed run with a kill: {wall:.1f} s; killed {killed}; ran on {ran_on}")
