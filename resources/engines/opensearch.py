"""A real OpenSearch 2.19, assembled from Maven Central jars: one node, or a
local cluster of several.

The launcher (engines/opensearch: a pom and one class) is built by `mvn
package`; `EmbeddedOpenSearch` starts one node on 127.0.0.1 with its data
under its home, waits for cluster health, and stops it with SIGTERM (the
launcher's shutdown hook closes the node cleanly). `EmbeddedOpenSearchCluster`
starts several such nodes as one cluster (same cluster name, each other's
transport ports as seed hosts), for the tests and benches that take a node
away; the platform itself runs one node.

The node listens on 127.0.0.1 only and authenticates nobody. Given an
`OpenSearchFront` (GROUNDWORK_OPENSEARCH_LISTEN), `start` also starts the
project's nginx front on that address (HTTPS with a certificate of the
home's CA, basic auth; resources/engines/nginx.py) and returns its URL: the
only way in from another host.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from groundwork.errors import EngineUnavailable
from resources.engines.nginx import EmbeddedNginx, opensearch_front
from resources.engines.process import stop_by_pid_file
from resources.engines.tls import server_certificate

LAUNCHER_CLASS = "dev.groundwork.opensearch.EmbeddedNode"
SERIAL_GC = ("-XX:+UseSerialGC",)
#: the OpenSearch distribution's jvm.options (for comparison in benches)
G1_GC = ("-XX:+UseG1GC", "-XX:G1ReservePercent=25", "-XX:InitiatingHeapOccupancyPercent=30")


#: What a tenant index costs a node, measured with bench/keyword_tenants.py
#: (one node, SerialGC, one shard and 20 documents per tenant index): heap
#: after a full GC is ~50-60 MiB with no index and grows ~0.33 MiB per index
#: (512 MiB heap: 118 MiB at 200 indexes, 220 at 500; 1 GiB: 393 at 1,000, 523
#: at 1,500). The parent circuit breaker starts refusing requests once live
#: data fills the old generation (two thirds of the heap under SerialGC): at
#: 848 indexes with 512 MiB, at 1,922 with 1 GiB. The limit keeps the indexes
#: within half the heap, leaving the rest to merges, bulk and search requests
#: and the garbage between full collections.
BASELINE_HEAP_MIB = 60
HEAP_PER_SHARD_MIB = 0.33
INDEX_HEAP_SHARE = 0.5


def shard_limit_for_heap(heap: str) -> int:
    """`cluster.max_shards_per_node` for a node with this -Xmx (`512m`, `1g`):
    593 at 512 MiB, 1,369 at 1 GiB (the default), 2,921 at 2 GiB."""
    amount, unit = heap[:-1], heap[-1:].lower()
    if not amount.isdigit() or unit not in ("m", "g"):
        raise ValueError(f"a heap is a number of MiB or GiB, like 512m or 2g, not {heap!r}")
    mib = int(amount) * (1024 if unit == "g" else 1)
    return max(1, int((mib * INDEX_HEAP_SHARE - BASELINE_HEAP_MIB) / HEAP_PER_SHARD_MIB))


def cluster_name_for(home: Path) -> str:
    """Names the home that owns the node(s): another checkout's node on our port is refused."""
    digest = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:10]
    return f"groundwork-{digest}"


@dataclass(frozen=True, slots=True)
class OpenSearchFront:
    """The authenticating front of a node: where it listens, the one user it
    admits, and the home of its config and of the engines' CA."""

    home: Path
    tls_home: Path
    host: str
    port: int
    user: str
    password: str = field(repr=False)
    names: tuple[str, ...] = ()

    @property
    def connect_host(self) -> str:
        return "127.0.0.1" if self.host in ("0.0.0.0", "*", "") else self.host  # noqa: S104

    @property
    def url(self) -> str:
        return f"https://{self.connect_host}:{self.port}"

    @property
    def ca_cert(self) -> Path:
        return self.tls_home / "ca.crt"

    def server(self) -> EmbeddedNginx:
        return EmbeddedNginx(self.home, self.connect_host, self.port)

    def start(self, upstream: str) -> str:
        """Start the front (or rewrite its users and reload it) before `upstream`."""
        tls = server_certificate(self.tls_home, [self.connect_host, *self.names], "opensearch")
        nginx = self.server()
        nginx.write_users({self.user: self.password})
        nginx.start(opensearch_front(self.home, self.host, self.port, upstream, tls))
        return self.url


class EmbeddedOpenSearch:
    def __init__(
        self,
        home: Path,
        launcher_dir: Path,
        http_port: int,
        transport_port: int,
        heap: str = "1g",
        *,
        cluster_name: str | None = None,
        node_settings: Mapping[str, str] | None = None,
        gc_options: Sequence[str] = SERIAL_GC,
        front: OpenSearchFront | None = None,
    ) -> None:
        self.home = home
        self.front = front
        self.launcher_dir = launcher_dir
        self.http_port = http_port
        self.transport_port = transport_port
        self.heap = heap
        self._cluster_name = cluster_name
        #: put over the launcher's single-node defaults (key=value arguments)
        self.node_settings = dict(node_settings or {})
        self.gc_options = tuple(gc_options)
        self.started_seconds = 0.0

    @property
    def cluster_name(self) -> str:
        return self._cluster_name or cluster_name_for(self.home)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def pid_file(self) -> Path:
        return self.home / "node.pid"

    @property
    def log_path(self) -> Path:
        return self.home / "node.log"

    def start(self, timeout: float = 180.0) -> str:
        """Start the node, or reuse ours if it is already up; refuse a stranger
        on our port. With a front: the front's URL, else the node's."""
        started = time.monotonic()
        process = self.launch()
        if process is not None:
            self.wait_until_up(process, timeout)
        self.started_seconds = time.monotonic() - started
        if self.front is not None:
            return self.front.start(self.url)
        return self.url

    def launch(self) -> subprocess.Popen[bytes] | None:
        """Start the node's process without waiting for it (None: ours already
        answers). A cluster launches every member first: none is healthy alone."""
        health = _health(self.url)
        if health is not None:
            if health.get("cluster_name") != self.cluster_name:
                raise EngineUnavailable(
                    f"port {self.http_port} is held by another OpenSearch ({health.get('cluster_name')}, "
                    f"not this home's {self.cluster_name}); stop it or set GROUNDWORK_OPENSEARCH_PORT to a free port"
                )
            return None
        jar = self.launcher_dir / "target" / "groundwork-opensearch-1.0.0.jar"
        classpath_file = self.launcher_dir / "target" / "classpath.txt"
        if not jar.exists() or not classpath_file.exists():
            raise EngineUnavailable(
                f"the OpenSearch launcher is not built ({jar} missing); "
                f"run `mvn -q -B package` in {self.launcher_dir} (the setup script does this)"
            )
        self.home.mkdir(parents=True, exist_ok=True)
        classpath = f"{jar}{os.pathsep}{classpath_file.read_text().strip()}"
        command = [
            "java",
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            *self.gc_options,
            "-Dlog4j2.disable.jmx=true",
            "-Djava.awt.headless=true",
            "-cp",
            classpath,
            LAUNCHER_CLASS,
            str(self.home),
            str(self.http_port),
            str(self.transport_port),
            self.cluster_name,
            *(f"{key}={value}" for key, value in sorted(self.node_settings.items())),
        ]
        with open(self.log_path, "ab") as log:
            # A session of its own: Ctrl-C in the terminal reaches our supervisor,
            # which then stops the node in order, instead of killing it mid-write.
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.pid_file.write_text(str(process.pid))
        return process

    def wait_until_up(self, process: subprocess.Popen[bytes], timeout: float) -> None:
        """Until the node answers cluster health green or yellow (for a cluster
        member: until it has joined a cluster with an elected manager)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                # Another process may have started the node at the same moment: reuse it.
                if _health(self.url) is not None:
                    return
                tail = self.log_path.read_text(errors="replace")[-3000:]
                raise EngineUnavailable(f"OpenSearch exited with {process.returncode}:\n{tail}")
            health = _health(self.url)
            if health is not None and health.get("status") in ("green", "yellow"):
                return
            time.sleep(0.5)
        process.terminate()
        raise EngineUnavailable(
            f"OpenSearch did not become healthy within {timeout:.0f} s; see {self.log_path}"
        )

    def stop(self, timeout: float = 60.0) -> None:
        if self.front is not None:
            self.front.server().stop()
        stop_by_pid_file(self.pid_file, timeout)

    def kill(self) -> None:
        """SIGKILL, no shutdown hook: a crash, for the tests and benches of node loss."""
        pid = self._pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        self.pid_file.unlink(missing_ok=True)

    def hang(self, hung: bool = True) -> None:
        """SIGSTOP (hung=True) or SIGCONT: a node that stops answering without
        closing its sockets (a long GC pause, a frozen VM), for the tests and
        benches of a hung node; unlike a kill, clients see no refusal, only silence."""
        pid = self._pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP if hung else signal.SIGCONT)

    def is_running(self) -> bool:
        return _health(self.url) is not None

    def has_process(self) -> bool:
        """This home's node process is alive, answering or not. Whoever decides
        to stop a node only if it started it asks this, not `is_running`: a
        loaded node can miss the health probe's deadline and would be taken for
        one that was not running (a bench once stopped a node it had not started)."""
        pid = self._pid()
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True  # alive, another user's
        return True

    def _pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None


class EmbeddedOpenSearchCluster:
    """Several embedded nodes as one cluster on 127.0.0.1: one cluster name,
    every member's transport port a seed host, every member eligible as
    cluster manager and a data node, each with its own home (one node per data
    directory). The cluster forms once all initial members are up; after that
    a member that is killed and started again rejoins from its data.

    With two members the voting configuration holds one of them (it stays
    odd): losing the other costs nothing, losing that one leaves no cluster
    manager until it returns. Three members survive the loss of any one."""

    def __init__(
        self,
        home: Path,
        launcher_dir: Path,
        http_ports: Sequence[int],
        transport_ports: Sequence[int],
        heap: str = "1g",
        node_settings: Mapping[str, str] | None = None,
    ) -> None:
        if len(http_ports) != len(transport_ports) or len(http_ports) < 2:
            raise ValueError(
                "a cluster needs two or more nodes, each with an HTTP and a transport port"
            )
        self.home = home
        self.cluster_name = cluster_name_for(home)
        self.node_names = [f"groundwork-node-{n + 1}" for n in range(len(http_ports))]
        members = {
            "discovery.type": "zen",
            "discovery.seed_hosts": ",".join(f"127.0.0.1:{p}" for p in transport_ports),
            "cluster.initial_cluster_manager_nodes": ",".join(self.node_names),
            "cluster.max_shards_per_node": str(shard_limit_for_heap(heap)),
            **(node_settings or {}),
        }
        self.nodes = [
            EmbeddedOpenSearch(
                home / name,
                launcher_dir,
                http_port,
                transport_port,
                heap,
                cluster_name=self.cluster_name,
                node_settings={**members, "node.name": name},
            )
            for name, http_port, transport_port in zip(
                self.node_names, http_ports, transport_ports, strict=True
            )
        ]

    @property
    def url(self) -> str:
        """Every member, comma-separated: the form GROUNDWORK_OPENSEARCH_URL takes."""
        return ",".join(node.url for node in self.nodes)

    def start(self, timeout: float = 240.0) -> str:
        processes = [(node, node.launch()) for node in self.nodes]
        for node, process in processes:
            if process is not None:
                node.wait_until_up(process, timeout)
        self.wait_for_status("yellow", timeout=timeout)
        return self.url

    def stop(self, timeout: float = 60.0) -> None:
        for node in self.nodes:
            node.stop(timeout)

    def kill(self, member: int) -> None:
        self.nodes[member].kill()

    def hang(self, member: int, hung: bool = True) -> None:
        self.nodes[member].hang(hung)

    def restart(self, member: int, timeout: float = 180.0) -> None:
        self.nodes[member].start(timeout)

    def health(self) -> dict[str, object]:
        """Cluster health as the first member that answers reports it."""
        for node in self.nodes:
            health = _health(node.url)
            if health is not None:
                return health
        raise EngineUnavailable(f"no member of {self.cluster_name} answers")

    def cluster_manager(self) -> int:
        """The index of the elected cluster manager among the members."""
        for node in self.nodes:
            with contextlib.suppress(OSError, ValueError):
                with urllib.request.urlopen(
                    f"{node.url}/_cat/cluster_manager?format=json", timeout=5
                ) as response:
                    name = json.loads(response.read())[0]["node"]
                return self.node_names.index(name)
        raise EngineUnavailable(f"no member of {self.cluster_name} names a cluster manager")

    def wait_for_status(
        self, status: str = "green", nodes: int | None = None, timeout: float = 180.0
    ) -> float:
        """Seconds until the cluster reports `status` (or better) with `nodes`
        members (default: all) and nothing initializing or relocating."""
        wanted = len(self.nodes) if nodes is None else nodes
        acceptable = {"green"} if status == "green" else {"green", "yellow"}
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            with contextlib.suppress(EngineUnavailable):
                health = self.health()
                if (
                    health.get("status") in acceptable
                    and health.get("number_of_nodes") == wanted
                    and health.get("initializing_shards") == 0
                    and health.get("relocating_shards") == 0
                ):
                    return time.monotonic() - started
            time.sleep(0.25)
        raise EngineUnavailable(
            f"{self.cluster_name} did not reach {status} with {wanted} nodes within {timeout:.0f} s"
        )


def _health(url: str) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(f"{url}/_cluster/health", timeout=2) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]
    except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError, OSError):
        return None
