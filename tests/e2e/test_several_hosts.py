"""Faults on several hosts: two `groundwork worker` processes, each with a home
of its own and only URLs and credentials (PostgreSQL, OpenSearch, S3, the
broker), run the distributed ingest job's steps through Dagster's Celery
executor (Redis, started by the project with a password). One worker is
killed with SIGKILL in the middle of an indexing shard: the broker hands the
shard to the other worker, the run completes, the stores agree, no vector or
keyword row exists twice, and the tenant's versions were published together,
after every shard.

The worker hosts run in network namespaces of their own where the machine
allows it, and reach the engines where they listen with authentication on
one address beyond loopback (tests/e2e/hosts.py, shared with
test_topology.py): the kill then lands on a host that shares nothing with
the others but that address. Where namespaces cannot be made, a warning
says why and the workers run on the machine's loopback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator

import dagster as dg
import pytest

from resources.composition.platform import EngineEndpoints
from resources.composition.settings import PROJECT_ROOT
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from testbed.netns import net_namespace_of
from testbed.tenants import seed_tenant
from testbed.worker_faults import celery_worker_of, first_shard_on_a_worker
from tests.e2e.hosts import (
    EngineHosts,
    HostPorts,
    document,
    engine_hosts,
    host_env,
    run_host_instance_home,
    run_host_platform,
    run_host_variables,
    start_worker,
    stop_processes,
    wait_ready,
)

#: test_topology.py holds 5493/5494, 9493, 6493, 7493
PORTS = HostPorts(postgres=5497, opensearch_front=9497, redis=6497, s3_front=7497)
WORKERS = ("w1", "w2")
VISIBILITY_SECONDS = 15
SHARD_VERSIONS = 12
DOCUMENTS = 36


@pytest.fixture(scope="module")
def hosts(engines: EngineEndpoints, seaweedfs: EmbeddedSeaweedFS) -> Iterator[EngineHosts]:
    with engine_hosts("faults", PORTS, WORKERS, engines, seaweedfs) as hosts:
        yield hosts


def test_a_worker_killed_mid_shard_loses_and_duplicates_nothing(
    hosts: EngineHosts, index_prefix: str
) -> None:
    s3_prefix = f"faults-{uuid.uuid4().hex[:8]}"
    env = host_env(
        hosts, s3_prefix, shard_versions=SHARD_VERSIONS, visibility_seconds=VISIBILITY_SECONDS
    )
    run_home = hosts.home / "run-host"
    with contextlib.closing(run_host_platform(env, run_home, index_prefix)) as platform:
        tenant = seed_tenant(
            platform, "hosts", {f"notes-{n}.md": document(n) for n in range(DOCUMENTS)}
        )
        homes = {name: hosts.home / f"host-{name}" for name in WORKERS}
        workers = {
            name: start_worker(name, env, homes[name], index_prefix, hosts.network.prefix(name))
            for name in homes
        }
        killed: dict[str, str] = {}
        killed_in: list[int] = []  # the network namespace the killed process was in
        try:
            wait_ready(workers, homes)
            hosts.assert_in_their_own_namespaces(workers)
            dagster_home = run_host_instance_home(
                platform, run_home / "dagster", "dagster_test_hosts"
            )
            with run_host_variables(env):
                instance = dg.DagsterInstance.from_config(str(dagster_home))
                instance.add_dynamic_partitions("tenant", [tenant])

                def kill_the_first_shard_worker() -> None:
                    deadline = time.monotonic() + 600
                    while time.monotonic() < deadline and not killed:
                        found = first_shard_on_a_worker(instance, tenant)
                        if found is not None:
                            _, step, name = found
                            time.sleep(1.0)  # inside the shard: models are loaded, writing began
                            pid = workers[name].pid
                            killed_in.append(net_namespace_of(pid))
                            os.killpg(pid, signal.SIGKILL)
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
                    assert killed, "no shard started on a worker"
                    assert result.success, [e.message for e in result.all_events if e.is_failure]
                    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
                    logs = instance.all_logs(result.run_id)
                watcher.join(5)
        finally:
            stop_processes(list(workers.values()))

        # the kill took the worker itself, in its host's namespace: `ip netns
        # exec` runs the worker in place, so the pid started (and its process
        # group) is the worker's, which died of the SIGKILL, not of the stop
        victim = killed["worker"]
        assert workers[victim].returncode == -signal.SIGKILL, workers[victim].returncode
        namespace = hosts.network.hosts.get(victim)
        if namespace is not None:
            assert killed_in == [namespace.inode()], killed_in
        # the killed shard ran again, on the other worker
        ran_on = [celery_worker_of(e) for e in logs if e.step_key == killed["step"]]
        ran_on = [n for n in ran_on if n]
        survivor = "w2" if victim == "w1" else "w1"
        assert ran_on[0] == victim and survivor in ran_on[1:], ran_on
        # several shards, and every one finished before the one publication began
        order = [
            (e.step_key, e.dagster_event.event_type_value)
            for e in logs
            if e.dagster_event
            and e.dagster_event.event_type_value in ("STEP_SUCCESS", "STEP_START")
        ]
        shard_successes = [
            i
            for i, (k, t) in enumerate(order)
            if "ingest_shard[" in (k or "") and t == "STEP_SUCCESS"
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
    where = hosts.network.describe()
    print(f"distributed run with a kill: {wall:.1f} s; killed {killed}; ran on {ran_on}; {where}")
