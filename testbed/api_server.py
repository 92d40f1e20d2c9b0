"""The retrieval API in a subprocess for benchmarks, on its own database and index prefix."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for pid {pid}")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


@contextlib.contextmanager
def serve_api(
    port: int,
    database: str,
    index_prefix: str,
    on_start: Callable[[int], None] | None = None,
    workers: int = 1,
    extra_env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Serve the API; `on_start` receives the server's pid (for memory figures);
    `extra_env` adds settings (e.g. GROUNDWORK_DATABASE_REPLICA_URL)."""
    env = dict(os.environ, GROUNDWORK_DATABASE_NAME=database, GROUNDWORK_INDEX_PREFIX=index_prefix)
    env.update(extra_env or {})
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "uvicorn"),
            "retrieval_api.main:app",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--log-level",
            "warning",
        ],
        env=env,
        cwd=Path(__file__).resolve().parents[1],
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        if on_start is not None:
            on_start(server.pid)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)
