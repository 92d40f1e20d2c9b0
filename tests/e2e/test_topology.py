"""The several-machines topology of docs/several-hosts.md, with every engine
authenticating: an API host, two worker hosts (separate processes, each its
own GROUNDWORK_HOME, only URLs and credentials in their environment) and the
engines.

The worker hosts run in network namespaces of their own (testbed/netns.py),
each linked to the machine by a veth pair whose root end carries the
engines' address: that address is all they reach, and the machine's
loopback, where the engines' unauthenticated ports stay, is not theirs
(asserted). Every host, the run host and the API host too, dials the engines
at that address, where each listens with authentication on (PostgreSQL and
OpenSearch behind TLS fronts, S3 through a TCP front to the gateway, Redis
with its password: tests/e2e/hosts.py, which test_several_hosts.py's kill
-9 test shares).

Where the machine cannot make namespaces (no `ip`, not root, a sandbox that
refuses), everything runs on loopback as before and a warning says why.

The test process is the run host: it registers a small tenant's files into
object storage and runs `tenant_ingest_distributed` through the Celery
executor, whose steps the two workers run; then the tenant is searched
through the API host's HTTP port with the tenant's key. Dagster's instance
names the database password as `{env: GROUNDWORK_DATABASE_PASSWORD}`: each
host resolves it from its own environment.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from resources.composition.platform import EngineEndpoints
from resources.composition.settings import PROJECT_ROOT
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from testbed.tenants import seed_tenant
from testbed.worker_faults import SHARD_STEP, celery_worker_of
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

#: test_several_hosts.py holds 5497/5498, 9497, 6497, 7497
PORTS = HostPorts(postgres=5493, opensearch_front=9493, redis=6493, s3_front=7493)
API_PORT = 8493
WORKERS = ("w1", "w2")
DOCUMENTS = 12
SHARD_VERSIONS = 6


@pytest.fixture(scope="module")
def hosts(engines: EngineEndpoints, seaweedfs: EmbeddedSeaweedFS) -> Iterator[EngineHosts]:
    with engine_hosts("topo", PORTS, WORKERS, engines, seaweedfs) as hosts:
        yield hosts


def _start_api(env: dict[str, str], home: Path, index_prefix: str) -> subprocess.Popen[bytes]:
    home.mkdir(parents=True)
    log = open(home / "api.log", "wb")  # noqa: SIM115
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "retrieval_api.main:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(API_PORT),
        ],
        env={**env, "GROUNDWORK_HOME": str(home), "GROUNDWORK_INDEX_PREFIX": index_prefix},
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=PROJECT_ROOT,
        start_new_session=True,
    )


def _post(path: str, body: dict[str, object], key: str) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{API_PORT}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), json.loads(exc.read() or b"{}")


def _a_worker_step_log(instance: dg.DagsterInstance, run_id: str) -> str:
    """The captured stdout and stderr of the run's first shard step, as this
    (the run host's) instance reads them."""
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None or event.event_type_value != "LOGS_CAPTURED":
            continue
        captured = event.logs_captured_data
        if not any(SHARD_STEP in key for key in captured.step_keys or ()):
            continue
        manager = instance.compute_log_manager
        data = manager.get_log_data(manager.build_log_key_for_run(run_id, captured.file_key))
        return b"".join(part or b"" for part in (data.stdout, data.stderr)).decode(errors="replace")
    raise AssertionError("no shard step's logs were captured")


def test_an_api_host_and_two_workers_ingest_and_search_with_authentication_on(
    hosts: EngineHosts, index_prefix: str
) -> None:
    s3_prefix = f"topology-{uuid.uuid4().hex[:8]}"
    env = host_env(hosts, s3_prefix, shard_versions=SHARD_VERSIONS, visibility_seconds=120)
    run_home = hosts.home / "run-host"
    platform = run_host_platform(env, run_home, index_prefix)
    tenant = seed_tenant(platform, "topo", {f"notes-{n}.md": document(n) for n in range(DOCUMENTS)})
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "topology")

    homes = {name: hosts.home / f"host-{name}" for name in WORKERS}
    workers = {
        name: start_worker(name, env, homes[name], index_prefix, hosts.network.prefix(name))
        for name in homes
    }
    api = _start_api(env, hosts.home / "host-api", index_prefix)
    try:
        wait_ready(workers, homes)
        hosts.assert_in_their_own_namespaces(workers)
        dagster_home = run_host_instance_home(platform, run_home / "dagster", "dagster_topology")
        written = (dagster_home / "dagster.yaml").read_text()
        assert env["GROUNDWORK_DATABASE_PASSWORD"] not in written
        assert env["GROUNDWORK_S3_SECRET_ACCESS_KEY"] not in written
        assert "ObjectStoreComputeLogs" in written
        with run_host_variables(env):
            instance = dg.DagsterInstance.from_config(str(dagster_home))
            instance.add_dynamic_partitions("tenant", [tenant])
            job = dg.build_reconstructable_job(
                "tests.e2e.distributed_jobs",
                "distributed_ingest",
                reconstructable_args=(index_prefix,),
                reconstructor_working_directory=str(PROJECT_ROOT),
            )
            with dg.execute_job(
                job, instance, tags={"dagster/partition": tenant}, raise_on_error=False
            ) as result:
                assert result.success, [e.message for e in result.all_events if e.is_failure]
                checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
                ran_on = {w for e in instance.all_logs(result.run_id) if (w := celery_worker_of(e))}
                worker_log = _a_worker_step_log(instance, result.run_id)
        assert checks["stores_agree"] is True
        assert ran_on <= {"w1", "w2"} and ran_on, ran_on
        # a step a worker host ran, read by the run host from the object store
        # (the worker's own disk is not the run host's)
        assert "ingest_shard" in worker_log, worker_log[-2000:]

        deadline = time.monotonic() + 120
        status, body = 0, dict[str, object]()
        while time.monotonic() < deadline:
            assert api.poll() is None, (hosts.home / "host-api" / "api.log").read_text()[-3000:]
            try:
                status, body = _post("/v1/search", {"query": "lantern harbor beacon"}, key)
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(1.0)
        assert status == 200, body
        hits = body["hits"]
        assert isinstance(hits, list) and hits
        assert all(str(h["filename"]).startswith("notes-") for h in hits), hits[0]
        refused, _ = _post("/v1/search", {"query": "lantern"}, "gw_not_a_key")
        assert refused == 401
    finally:
        stop_processes([*workers.values(), api])
        platform.close()
    for name, home in homes.items():
        log = (home / "worker.log").read_text(errors="replace")
        for secret in (env["GROUNDWORK_DATABASE_PASSWORD"], hosts.keyword_front.password):
            assert secret not in log, name
    where = hosts.network.describe()
    print(f"topology: steps ran on {sorted(ran_on)} {where}; {len(hits)} hits through the API")
