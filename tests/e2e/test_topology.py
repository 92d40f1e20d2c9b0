"""The several-machines topology of docs/several-hosts.md, with every engine
authenticating: an API host, two worker hosts (separate processes, each its
own GROUNDWORK_HOME, only URLs and credentials in their environment) and the
engines.

The worker hosts run in network namespaces of their own (testbed/netns.py),
each linked to the machine by a veth pair whose root end carries the
engines' address: that address is all they reach, and the machine's
loopback, where the engines' unauthenticated ports stay, is not theirs
(asserted). Every host, the run host and the API host too, dials the engines
at that address, where each listens with authentication on:

- PostgreSQL: a server of this test's own reached over TCP only through TLS
  (the nginx front, verify-full against the home's CA, the address in the
  certificate) with a SCRAM password; the server itself on 127.0.0.1;
- OpenSearch: the shared test node (127.0.0.1) behind the HTTPS basic-auth
  front;
- SeaweedFS: the test server (127.0.0.1), which refuses anonymous requests,
  through a TCP front on the address (`s3_endpoint`);
- Redis: the broker, with its password.

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

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import dagster as dg
import pytest

from resources.composition.engine_auth import dagster_postgres_storage
from resources.composition.platform import EngineEndpoints, Platform, connect
from resources.composition.settings import PROJECT_ROOT, GroundworkSettings
from resources.engines.nginx import STREAM_MODULE, EmbeddedNginx
from resources.engines.opensearch import OpenSearchFront
from resources.engines.postgres import EmbeddedPostgres, PostgresListen
from resources.engines.redis import EmbeddedRedis
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from resources.postgres.database import ensure_database
from testbed.netns import NamespacedHost, NamespacesUnavailable, namespaced_hosts, net_namespace_of
from testbed.tenants import seed_tenant
from testbed.worker_faults import celery_worker_of
from tests.conftest import TEST_DATABASE, TEST_S3_BUCKET
from tests.e2e.test_several_hosts import _document, _start_worker, _wait_ready

PG_PORT = 5493
OPENSEARCH_FRONT_PORT = 9493
REDIS_PORT = 6493
API_PORT = 8493
S3_FRONT_PORT = 7493
WORKERS = ("w1", "w2")
DOCUMENTS = 12
SHARD_VERSIONS = 6


@pytest.fixture(scope="module")
def hosts_home() -> Iterator[Path]:
    # short: the PostgreSQL socket's path must stay under 108 bytes
    home = Path(tempfile.mkdtemp(prefix="gw-topo-", dir="/tmp"))
    yield home
    shutil.rmtree(home, ignore_errors=True)


@dataclass(frozen=True, slots=True)
class Network:
    """Where the engines listen and the worker hosts' namespaces; without
    namespaces, the machine's loopback and why."""

    engines_address: str
    hosts: dict[str, NamespacedHost] = field(default_factory=dict)
    loopback_because: str | None = None

    def prefix(self, worker: str) -> list[str]:
        """What runs a worker host's process in its namespace (nothing on loopback)."""
        host = self.hosts.get(worker)
        return host.prefix if host is not None else []


@pytest.fixture(scope="module")
def network() -> Iterator[Network]:
    """The worker hosts' namespaces. Asked for by every engine fixture, so
    the address exists before anything binds it and goes after the last
    listener stopped (module fixtures are torn down in reverse)."""
    stack = contextlib.ExitStack()
    try:
        hosts = stack.enter_context(namespaced_hosts(WORKERS))
    except NamespacesUnavailable as exc:
        warnings.warn(f"the worker hosts share the machine's loopback: {exc}", stacklevel=1)
        network = Network("127.0.0.1", loopback_because=str(exc))
    else:
        network = Network(hosts[WORKERS[0]].engines_address, hosts)
    with stack:
        yield network


@pytest.fixture(scope="module")
def database(hosts_home: Path, network: Network) -> Iterator[EmbeddedPostgres]:
    # the front listens on the engines' address alone, which the URL then
    # names (connect_host) and the certificate holds (verify-full)
    listen = PostgresListen(network.engines_address, PG_PORT, secrets.token_urlsafe(18))
    server = EmbeddedPostgres(hosts_home / "db" / "pgdata", listen)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def keyword_front(
    engines: EngineEndpoints, hosts_home: Path, network: Network
) -> Iterator[OpenSearchFront]:
    if engines.opensearch is None:
        pytest.skip("no embedded OpenSearch (an external GROUNDWORK_OPENSEARCH_URL is set)")
    front = OpenSearchFront(
        hosts_home / "os-front",
        hosts_home / "db" / "engine-tls",  # one CA for the engines of this "machine"
        network.engines_address,
        OPENSEARCH_FRONT_PORT,
        "groundwork",
        secrets.token_urlsafe(18),
    )
    front.start(engines.opensearch.url)
    yield front
    front.server().stop()


@pytest.fixture(scope="module")
def broker(hosts_home: Path, network: Network) -> Iterator[EmbeddedRedis]:
    redis = EmbeddedRedis(hosts_home / "redis", REDIS_PORT, bind=network.engines_address)
    redis.start()
    yield redis
    redis.stop()


def _tcp_front(home: Path, listen: str, port: int, upstream_port: int) -> str:
    """An nginx stream config that passes listen:port through to 127.0.0.1:upstream_port."""
    return "\n".join(
        [
            f"load_module {STREAM_MODULE};",
            "daemon off;",
            "worker_processes 1;",
            f"pid {home / 'nginx.pid'};",
            f"error_log {home / 'error.log'} warn;",
            "events { worker_connections 64; }",
            "stream {",
            f"  server {{ listen {listen}:{port}; proxy_pass 127.0.0.1:{upstream_port}; }}",
            "}",
            "",
        ]
    )


@pytest.fixture(scope="module")
def s3_endpoint(seaweedfs: EmbeddedSeaweedFS, hosts_home: Path, network: Network) -> Iterator[str]:
    """Where the hosts reach object storage. The session's SeaweedFS binds
    127.0.0.1 only, and should: its master, volume and filer ports do not
    authenticate. Its S3 gateway does (SigV4 signs each request, the secret
    never crosses; anonymous requests are refused), so on the engines'
    address a TCP front passes bytes through to the gateway alone (no TLS:
    the S3 client has no CA setting). On loopback: the gateway itself."""
    if not network.hosts:
        yield seaweedfs.endpoint
        return
    front = EmbeddedNginx(hosts_home / "s3-front", network.engines_address, S3_FRONT_PORT)
    front.start(_tcp_front(front.home, network.engines_address, S3_FRONT_PORT, seaweedfs.s3_port))
    yield f"http://{network.engines_address}:{S3_FRONT_PORT}"
    front.stop()


def host_env(
    database: EmbeddedPostgres,
    front: OpenSearchFront,
    seaweedfs: EmbeddedSeaweedFS,
    broker: EmbeddedRedis,
    s3_endpoint: str,
    s3_prefix: str,
) -> dict[str, str]:
    """What each host is given: URLs without secrets, and the secrets apart;
    the same for every host, each URL naming the engines' address."""
    assert database.listen is not None
    base = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDWORK_")}
    url = database.uri("postgres").split("&passfile=")[0]  # a host names its own passfile
    credentials = seaweedfs.credentials
    return {
        **base,
        "GROUNDWORK_DATABASE_URL": url,
        "GROUNDWORK_DATABASE_PASSWORD": database.listen.password,
        "GROUNDWORK_DATABASE_NAME": TEST_DATABASE,
        "GROUNDWORK_OPENSEARCH_URL": front.url,
        "GROUNDWORK_OPENSEARCH_USER": front.user,
        "GROUNDWORK_OPENSEARCH_PASSWORD": front.password,
        "GROUNDWORK_OPENSEARCH_CA": str(front.ca_cert),
        "GROUNDWORK_BLOB_BACKEND": "s3",
        "GROUNDWORK_S3_ENDPOINT": s3_endpoint,
        "GROUNDWORK_S3_BUCKET": TEST_S3_BUCKET,
        "GROUNDWORK_S3_PREFIX": s3_prefix,
        "GROUNDWORK_S3_ACCESS_KEY_ID": credentials.access_key_id,
        "GROUNDWORK_S3_SECRET_ACCESS_KEY": credentials.secret_access_key,
        "GROUNDWORK_BROKER_URL": broker.url,
        "GROUNDWORK_STEP_VISIBILITY_SECONDS": "120",
        "GROUNDWORK_SHARD_VERSIONS": str(SHARD_VERSIONS),
        "PYTHONUNBUFFERED": "1",
    }


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


def _run_host_platform(env: dict[str, str], home: Path, index_prefix: str) -> Platform:
    """The run host's own platform, from the same variables as the others."""
    settings = GroundworkSettings.from_env({**env, "GROUNDWORK_HOME": str(home)})
    return connect(replace(settings), database=TEST_DATABASE, index_prefix=index_prefix)


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for proc in processes:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in processes:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _assert_in_their_own_namespaces(
    network: Network, workers: dict[str, subprocess.Popen[bytes]], database: EmbeddedPostgres
) -> None:
    """Each worker process is in its host's namespace, not the test's, and the
    machine's loopback is not the worker host's: the database server's own
    port (127.0.0.1, behind the TLS front) is refused there while this
    process reaches it. (The workers reached the broker, so the link works.)"""
    assert database.listen is not None
    server_port = database.listen.server_port
    ours = net_namespace_of(os.getpid())
    for name, host in network.hosts.items():
        assert net_namespace_of(workers[name].pid) == host.inode() != ours, name
        assert host.connect_error("127.0.0.1", server_port) == "ConnectionRefusedError", name
    if network.hosts:
        socket.create_connection(("127.0.0.1", server_port), timeout=5).close()


def test_an_api_host_and_two_workers_ingest_and_search_with_authentication_on(
    database: EmbeddedPostgres,
    keyword_front: OpenSearchFront,
    seaweedfs: EmbeddedSeaweedFS,
    broker: EmbeddedRedis,
    s3_endpoint: str,
    network: Network,
    index_prefix: str,
    hosts_home: Path,
) -> None:
    s3_prefix = f"topology-{uuid.uuid4().hex[:8]}"
    env = host_env(database, keyword_front, seaweedfs, broker, s3_endpoint, s3_prefix)
    run_home = hosts_home / "run-host"
    platform = _run_host_platform(env, run_home, index_prefix)
    tenant = seed_tenant(
        platform, "topo", {f"notes-{n}.md": _document(n) for n in range(DOCUMENTS)}
    )
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "topology")

    homes = {name: hosts_home / f"host-{name}" for name in WORKERS}
    workers = {
        name: _start_worker(name, env, homes[name], index_prefix, network.prefix(name))
        for name in homes
    }
    api = _start_api(env, hosts_home / "host-api", index_prefix)
    saved = {
        k: os.environ.get(k) for k in ("GROUNDWORK_BROKER_URL", "GROUNDWORK_DATABASE_PASSWORD")
    }
    try:
        _wait_ready(workers, homes)
        _assert_in_their_own_namespaces(network, workers, database)
        dagster_home = run_home / "dagster"
        dagster_home.mkdir(parents=True)
        storage_url = ensure_database(platform.database_url, "dagster_topology")
        config = {"storage": {"postgres": dagster_postgres_storage(storage_url)}}
        (dagster_home / "dagster.yaml").write_text(
            json.dumps({**config, "telemetry": {"enabled": False}})
        )
        assert (
            env["GROUNDWORK_DATABASE_PASSWORD"] not in (dagster_home / "dagster.yaml").read_text()
        )
        os.environ["GROUNDWORK_BROKER_URL"] = env["GROUNDWORK_BROKER_URL"]
        os.environ["GROUNDWORK_DATABASE_PASSWORD"] = env["GROUNDWORK_DATABASE_PASSWORD"]
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
        assert checks["stores_agree"] is True
        assert ran_on <= {"w1", "w2"} and ran_on, ran_on

        deadline = time.monotonic() + 120
        status, body = 0, dict[str, object]()
        while time.monotonic() < deadline:
            assert api.poll() is None, (hosts_home / "host-api" / "api.log").read_text()[-3000:]
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
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _stop([*workers.values(), api])
        platform.close()
    for name, home in homes.items():
        log = (home / "worker.log").read_text(errors="replace")
        for secret in (env["GROUNDWORK_DATABASE_PASSWORD"], keyword_front.password):
            assert secret not in log, name
    where = (
        f"in namespaces {sorted(h.namespace for h in network.hosts.values())}"
        f" reaching {network.engines_address}"
        if network.hosts
        else f"on loopback ({network.loopback_because})"
    )
    print(f"topology: steps ran on {sorted(ran_on)} {where}; {len(hits)} hits through the API")
