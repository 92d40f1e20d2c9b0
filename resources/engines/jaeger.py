"""A real trace receiver: Jaeger (v2, an OpenTelemetry Collector build with
Jaeger's storage and query extensions), built from its Go module by `./run`
into engines/jaeger/target/jaeger.

`EmbeddedJaeger` starts it under its home with a config the project writes:
an OTLP/HTTP receiver and the query service (the UI and its JSON API) on
127.0.0.1 only, traces kept in memory (a receiver for a laptop or a test, not
a store: a restart forgets them), and no telemetry of its own (the Collector's
default would claim port 8888 for its metrics). Ready means the query API
answers. Point GROUNDWORK_OTLP_ENDPOINT at `otlp_endpoint` and open
`query_url` in a browser, or read `traces(...)` from its API.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from groundwork.errors import EngineUnavailable
from resources.engines.process import stop_by_pid_file

#: where ./run builds the binary (gitignored)
DEFAULT_BINARY = Path(__file__).resolve().parents[2] / "engines" / "jaeger" / "target" / "jaeger"

CONFIG = """\
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:{query_port}
    grpc:
      endpoint: 127.0.0.1:{query_grpc_port}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: {max_traces}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{otlp_port}
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
"""


class EmbeddedJaeger:
    """Ports: OTLP/HTTP on `otlp_port`; the query service's HTTP on
    `query_port` and its gRPC on `query_grpc_port` (default the next port; a
    test that picks free ports names it too, or the next port may be taken)."""

    def __init__(
        self,
        home: Path,
        otlp_port: int = 4318,
        query_port: int = 16686,
        *,
        binary: Path = DEFAULT_BINARY,
        max_traces: int = 50_000,
        query_grpc_port: int | None = None,
    ) -> None:
        self.home = home
        self.otlp_port = otlp_port
        self.query_port = query_port
        self.query_grpc_port = query_grpc_port or query_port + 1
        self.binary = binary
        self.max_traces = max_traces

    def __repr__(self) -> str:
        return f"EmbeddedJaeger(home={self.home!s}, otlp={self.otlp_port}, query={self.query_port})"

    @property
    def otlp_endpoint(self) -> str:
        """What GROUNDWORK_OTLP_ENDPOINT is set to (the exporter adds /v1/traces)."""
        return f"http://127.0.0.1:{self.otlp_port}"

    @property
    def query_url(self) -> str:
        return f"http://127.0.0.1:{self.query_port}"

    @property
    def pid_file(self) -> Path:
        return self.home / "jaeger.pid"

    def _write_config(self) -> Path:
        path = self.home / "jaeger.yaml"
        path.write_text(
            CONFIG.format(
                otlp_port=self.otlp_port,
                query_port=self.query_port,
                query_grpc_port=self.query_grpc_port,
                max_traces=self.max_traces,
            )
        )
        return path

    def is_running(self) -> bool:
        try:
            return httpx.get(f"{self.query_url}/api/services", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def start(self, timeout: float = 30.0) -> str:
        """Start the receiver, or reuse ours if it answers; return its OTLP endpoint."""
        if self.is_running():
            return self.otlp_endpoint
        if not self.binary.exists():
            raise EngineUnavailable(
                f"Jaeger is not built ({self.binary}); `./run setup` builds it from its Go module"
            )
        self.home.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        log = self.home / "jaeger.log"
        with open(log, "ab") as out:
            process = subprocess.Popen(
                [str(self.binary), "--config", str(config)],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.home,
            )
        self.pid_file.write_text(str(process.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise EngineUnavailable(f"jaeger exited with {process.returncode}:\n{tail}")
            if self.is_running():
                return self.otlp_endpoint
            time.sleep(0.2)
        self.stop()
        raise EngineUnavailable(f"jaeger's query API did not answer within {timeout:.0f} s")

    def traces(self, service: str, tags: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """The traces the receiver holds for `service` (its JSON query API),
        optionally only those with a span carrying each tag."""
        params: dict[str, str] = {"service": service, "limit": "100", "lookback": "1h"}
        if tags:
            params["tags"] = json.dumps(tags)
        response = httpx.get(f"{self.query_url}/api/traces", params=params, timeout=10)
        if response.status_code == 404:
            return []  # no trace of that service yet
        response.raise_for_status()
        return list(response.json().get("data") or [])

    def stop(self, timeout: float = 10.0) -> None:
        stop_by_pid_file(self.pid_file, timeout)
