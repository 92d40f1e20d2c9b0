"""A real single-node OpenSearch 2.19, assembled from Maven Central jars.

The launcher (engines/opensearch: a pom and one class) is built by `mvn
package`; this module starts it on 127.0.0.1 with its data under
GROUNDWORK_HOME/opensearch, waits for cluster health, and stops it with
SIGTERM (the launcher's shutdown hook closes the node cleanly).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from groundwork.errors import EngineUnavailable
from resources.engines.process import stop_by_pid_file

LAUNCHER_CLASS = "dev.groundwork.opensearch.EmbeddedNode"


class EmbeddedOpenSearch:
    def __init__(
        self,
        home: Path,
        launcher_dir: Path,
        http_port: int,
        transport_port: int,
        heap: str = "512m",
    ) -> None:
        self.home = home
        self.launcher_dir = launcher_dir
        self.http_port = http_port
        self.transport_port = transport_port
        self.heap = heap
        self.started_seconds = 0.0

    @property
    def cluster_name(self) -> str:
        """Names the home that owns the node: another checkout's node on our port is refused."""
        digest = hashlib.sha256(str(self.home.resolve()).encode()).hexdigest()[:10]
        return f"groundwork-{digest}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def pid_file(self) -> Path:
        return self.home / "node.pid"

    def start(self, timeout: float = 180.0) -> str:
        """Start the node, or reuse ours if it is already up; refuse a stranger on our port."""
        started = time.monotonic()
        health = _health(self.url)
        if health is not None:
            if health.get("cluster_name") != self.cluster_name:
                raise EngineUnavailable(
                    f"port {self.http_port} is held by another OpenSearch ({health.get('cluster_name')}, "
                    f"not this home's {self.cluster_name}); stop it or set GROUNDWORK_OPENSEARCH_PORT to a free port"
                )
            return self.url
        jar = self.launcher_dir / "target" / "groundwork-opensearch-1.0.0.jar"
        classpath_file = self.launcher_dir / "target" / "classpath.txt"
        if not jar.exists() or not classpath_file.exists():
            raise EngineUnavailable(
                f"the OpenSearch launcher is not built ({jar} missing); "
                f"run `mvn -q -B package` in {self.launcher_dir} (the setup script does this)"
            )
        self.home.mkdir(parents=True, exist_ok=True)
        log_path = self.home / "node.log"
        classpath = f"{jar}{os.pathsep}{classpath_file.read_text().strip()}"
        command = [
            "java",
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",
            "-Dlog4j2.disable.jmx=true",
            "-Djava.awt.headless=true",
            "-cp",
            classpath,
            LAUNCHER_CLASS,
            str(self.home),
            str(self.http_port),
            str(self.transport_port),
            self.cluster_name,
        ]
        with open(log_path, "ab") as log:
            # A session of its own: Ctrl-C in the terminal reaches our supervisor,
            # which then stops the node in order, instead of killing it mid-write.
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.pid_file.write_text(str(process.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                # Another process may have started the node at the same moment: reuse it.
                if _health(self.url) is not None:
                    return self.url
                tail = log_path.read_text(errors="replace")[-3000:]
                raise EngineUnavailable(f"OpenSearch exited with {process.returncode}:\n{tail}")
            health = _health(self.url)
            if health is not None and health.get("status") in ("green", "yellow"):
                self.started_seconds = time.monotonic() - started
                return self.url
            time.sleep(0.5)
        process.terminate()
        raise EngineUnavailable(
            f"OpenSearch did not become healthy within {timeout:.0f} s; see {log_path}"
        )

    def stop(self, timeout: float = 60.0) -> None:
        stop_by_pid_file(self.pid_file, timeout)

    def is_running(self) -> bool:
        return _health(self.url) is not None


def _health(url: str) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(f"{url}/_cluster/health", timeout=2) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]
    except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError, OSError):
        return None
