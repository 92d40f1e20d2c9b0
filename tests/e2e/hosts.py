"""Several "hosts" on one machine, as the tests that stand them up as
processes need them (test_topology.py, test_several_hosts.py): the worker
hosts in network namespaces of their own (testbed/netns.py), and the engines
listening with authentication on the one address the hosts dial.

`engine_hosts` makes the namespaces, then starts behind that address:

- PostgreSQL: a server of the caller's own, reached over TCP only through
  TLS (the nginx front, verify-full against the home's CA, the address in
  the certificate) with a SCRAM password; the server itself on 127.0.0.1.
  Not the session's server: that one listens on a Unix socket only, which
  no other machine could dial;
- OpenSearch: the session's node (127.0.0.1) behind the HTTPS basic-auth
  front;
- SeaweedFS: the session's server (127.0.0.1), which refuses anonymous
  requests, through a TCP front to its S3 gateway on the address;
- Redis: the broker, with its password, bound to the address.

Where the machine cannot make namespaces (no `ip`, not root, a sandbox that
refuses), everything runs on loopback and a warning says why: the tests
still stand their hosts up as separate processes, only the network is not
theirs.

Each module gives its own ports (`HostPorts`): pytest tears one module's
fixtures down before the next module's start, so within a session they do
not meet, but two sessions running one module each (or a bench beside a
test) would. The namespaces' names and addresses are per process
(testbed/netns.py refuses a second set while one is up).

Also here, because both modules run the same hosts: the documents of the
tenant, starting, awaiting and stopping `groundwork worker` processes, and
the run host's platform and Dagster instance.
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
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from resources.composition.engine_auth import dagster_postgres_storage
from resources.composition.platform import EngineEndpoints, Platform, connect
from resources.composition.settings import GroundworkSettings
from resources.dagster_glue.object_compute_logs import compute_logs_for
from resources.engines.nginx import STREAM_MODULE, EmbeddedNginx
from resources.engines.opensearch import OpenSearchFront
from resources.engines.postgres import EmbeddedPostgres, PostgresListen
from resources.engines.redis import EmbeddedRedis
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from resources.postgres.database import ensure_database
from testbed.netns import NamespacedHost, NamespacesUnavailable, namespaced_hosts, net_namespace_of
from testbed.worker_process import start_worker_process
from tests.conftest import TEST_DATABASE, TEST_S3_BUCKET

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

#: the variables a run host sets in its own environment: the executor reads
#: the broker from it, and dagster.yaml names the database password and the
#: object store's identity (the compute logs) by them
RUN_HOST_VARIABLES = (
    "GROUNDWORK_BROKER_URL",
    "GROUNDWORK_DATABASE_PASSWORD",
    "GROUNDWORK_S3_ACCESS_KEY_ID",
    "GROUNDWORK_S3_SECRET_ACCESS_KEY",
)


def document(n: int) -> str:
    """A markdown file of several chunks whose words differ by n, so the
    tenant's chunks are distinct and searchable by those words."""
    sentences = []
    for s in range(24):
        words = [WORDS[(n * 7 + s * 3 + k * 5) % len(WORDS)] for k in range(14)]
        sentences.append(" ".join(words).capitalize() + f" (note {n}.{s}).")
    return f"# Field notes {n}\n\n" + "\n\n".join(
        " ".join(sentences[i : i + 4]) for i in range(0, len(sentences), 4)
    )


@dataclass(frozen=True, slots=True)
class HostPorts:
    """A module's ports on the engines' address (see the module docstring for
    why each module has its own)."""

    postgres: int  # the TLS front; the server itself takes the next one, on 127.0.0.1
    opensearch_front: int
    redis: int
    s3_front: int


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

    def describe(self) -> str:
        """For the test's summary line: where the hosts ran."""
        if self.hosts:
            namespaces = sorted(h.namespace for h in self.hosts.values())
            return f"in namespaces {namespaces} reaching {self.engines_address}"
        return f"on loopback ({self.loopback_because})"


@dataclass(frozen=True, slots=True)
class EngineHosts:
    """The engines as every host dials them, and the network the worker hosts are in."""

    home: Path
    network: Network
    database: EmbeddedPostgres
    keyword_front: OpenSearchFront
    seaweedfs: EmbeddedSeaweedFS
    broker: EmbeddedRedis
    s3_endpoint: str

    def assert_in_their_own_namespaces(self, workers: dict[str, subprocess.Popen[bytes]]) -> None:
        """Each worker process is in its host's namespace, not the test's, and the
        machine's loopback is not the worker host's: the database server's own
        port (127.0.0.1, behind the TLS front) is refused there while this
        process reaches it. (The workers reached the broker, so the link works.)
        On loopback there is nothing to assert."""
        assert self.database.listen is not None
        server_port = self.database.listen.server_port
        ours = net_namespace_of(os.getpid())
        for name, host in self.network.hosts.items():
            assert net_namespace_of(workers[name].pid) == host.inode() != ours, name
            assert host.connect_error("127.0.0.1", server_port) == "ConnectionRefusedError", name
        if self.network.hosts:
            socket.create_connection(("127.0.0.1", server_port), timeout=5).close()


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


@contextlib.contextmanager
def _network(workers: Sequence[str]) -> Iterator[Network]:
    """The worker hosts' namespaces, or the loopback with a warning saying why not."""
    stack = contextlib.ExitStack()
    try:
        hosts = stack.enter_context(namespaced_hosts(workers))
    except NamespacesUnavailable as exc:
        warnings.warn(f"the worker hosts share the machine's loopback: {exc}", stacklevel=1)
        network = Network("127.0.0.1", loopback_because=str(exc))
    else:
        network = Network(hosts[workers[0]].engines_address, hosts)
    with stack:
        yield network


@contextlib.contextmanager
def _s3_endpoint(
    seaweedfs: EmbeddedSeaweedFS, home: Path, network: Network, port: int
) -> Iterator[str]:
    """Where the hosts reach object storage. The session's SeaweedFS binds
    127.0.0.1 only, and should: its master, volume and filer ports do not
    authenticate. Its S3 gateway does (SigV4 signs each request, the secret
    never crosses; anonymous requests are refused), so on the engines'
    address a TCP front passes bytes through to the gateway alone (no TLS:
    the S3 client has no CA setting). On loopback: the gateway itself."""
    if not network.hosts:
        yield seaweedfs.endpoint
        return
    front = EmbeddedNginx(home / "s3-front", network.engines_address, port)
    front.start(_tcp_front(front.home, network.engines_address, port, seaweedfs.s3_port))
    try:
        yield f"http://{network.engines_address}:{port}"
    finally:
        front.stop()


@contextlib.contextmanager
def engine_hosts(
    name: str,
    ports: HostPorts,
    workers: Sequence[str],
    engines: EngineEndpoints,
    seaweedfs: EmbeddedSeaweedFS,
) -> Iterator[EngineHosts]:
    """The namespaces of `workers` and the engines listening for them, for a
    module's fixture; everything started is stopped on the way out, in
    reverse (the address goes after the last listener on it), also when a
    step of the set-up fails."""
    if engines.opensearch is None:
        pytest.skip("no embedded OpenSearch (an external GROUNDWORK_OPENSEARCH_URL is set)")
    with contextlib.ExitStack() as stack:
        # short: the PostgreSQL socket's path must stay under 108 bytes
        home = Path(tempfile.mkdtemp(prefix=f"gw-{name}-", dir="/tmp"))
        stack.callback(shutil.rmtree, home, ignore_errors=True)
        network = stack.enter_context(_network(workers))
        # the front listens on the engines' address alone, which the URL then
        # names (connect_host) and the certificate holds (verify-full)
        listen = PostgresListen(network.engines_address, ports.postgres, secrets.token_urlsafe(18))
        database = EmbeddedPostgres(home / "db" / "pgdata", listen)
        stack.callback(database.stop)
        database.start()
        keyword_front = OpenSearchFront(
            home / "os-front",
            home / "db" / "engine-tls",  # one CA for the engines of this "machine"
            network.engines_address,
            ports.opensearch_front,
            "groundwork",
            secrets.token_urlsafe(18),
        )
        stack.callback(lambda: keyword_front.server().stop())
        keyword_front.start(engines.opensearch.url)
        broker = EmbeddedRedis(home / "redis", ports.redis, bind=network.engines_address)
        stack.callback(broker.stop)
        broker.start()
        s3_endpoint = stack.enter_context(_s3_endpoint(seaweedfs, home, network, ports.s3_front))
        yield EngineHosts(home, network, database, keyword_front, seaweedfs, broker, s3_endpoint)


def host_env(
    hosts: EngineHosts, s3_prefix: str, *, shard_versions: int, visibility_seconds: int
) -> dict[str, str]:
    """What each host is given: URLs without secrets, and the secrets apart;
    the same for every host, each URL naming the engines' address."""
    database, front, broker = hosts.database, hosts.keyword_front, hosts.broker
    assert database.listen is not None
    base = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDWORK_")}
    url = database.uri("postgres").split("&passfile=")[0]  # a host names its own passfile
    credentials = hosts.seaweedfs.credentials
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
        "GROUNDWORK_S3_ENDPOINT": hosts.s3_endpoint,
        "GROUNDWORK_S3_BUCKET": TEST_S3_BUCKET,
        "GROUNDWORK_S3_PREFIX": s3_prefix,
        "GROUNDWORK_S3_ACCESS_KEY_ID": credentials.access_key_id,
        "GROUNDWORK_S3_SECRET_ACCESS_KEY": credentials.secret_access_key,
        "GROUNDWORK_BROKER_URL": broker.url,
        "GROUNDWORK_STEP_VISIBILITY_SECONDS": str(visibility_seconds),
        "GROUNDWORK_SHARD_VERSIONS": str(shard_versions),
        "PYTHONUNBUFFERED": "1",
    }


def run_host_platform(env: dict[str, str], home: Path, index_prefix: str) -> Platform:
    """The run host's own platform, from the same variables as the other hosts
    (not the session's platform, whose database is a Unix socket's)."""
    settings = GroundworkSettings.from_env({**env, "GROUNDWORK_HOME": str(home)})
    return connect(settings, database=TEST_DATABASE, index_prefix=index_prefix)


def run_host_instance_home(platform: Platform, home: Path, storage_database: str) -> Path:
    """A DAGSTER_HOME whose storage is `storage_database` on the hosts'
    server, the password named as `{env: GROUNDWORK_DATABASE_PASSWORD}`: the
    instance reference a worker receives through the broker carries the
    name, and each host resolves it from its own environment. Compute logs
    go to the object store as `groundwork up` writes them for these
    settings, so a step a worker ran is read here."""
    home.mkdir(parents=True)
    storage_url = ensure_database(platform.database_url, storage_database)
    config: dict[str, object] = {"storage": {"postgres": dagster_postgres_storage(storage_url)}}
    compute_logs = compute_logs_for(platform.settings)
    if compute_logs is not None:
        config["compute_logs"] = compute_logs
    (home / "dagster.yaml").write_text(json.dumps({**config, "telemetry": {"enabled": False}}))
    return home


@contextlib.contextmanager
def run_host_variables(env: dict[str, str]) -> Iterator[None]:
    """This process as the run host: the broker and the database password in
    its environment for the block, as they were after it."""
    saved = {k: os.environ.get(k) for k in RUN_HOST_VARIABLES}
    os.environ.update({k: env[k] for k in RUN_HOST_VARIABLES})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def start_worker(
    name: str,
    env: dict[str, str],
    home: Path,
    index_prefix: str,
    prefix: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """A `groundwork worker` process in a session of its own (its process
    group is its pid: what a fault test kills); `prefix` runs it inside
    something, such as a network namespace (`ip netns exec` execs the worker
    in place, so the pid is still the worker's)."""
    return start_worker_process(name, env, home, TEST_DATABASE, index_prefix, prefix)


def wait_ready(workers: dict[str, subprocess.Popen[bytes]], homes: dict[str, Path]) -> None:
    """Until every worker has connected to the broker (a worker that exits
    fails with its log's tail: a host that cannot reach an engine says so)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        logs = {n: (homes[n] / "worker.log").read_text(errors="replace") for n in workers}
        for name, proc in workers.items():
            assert proc.poll() is None, f"worker {name} exited:\n{logs[name][-3000:]}"
        if all(" ready." in text for text in logs.values()):
            return
        time.sleep(0.5)
    raise AssertionError("the workers did not connect to the broker")


def stop_processes(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each process group, SIGKILL to those still there after 20 s."""
    for proc in processes:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in processes:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
