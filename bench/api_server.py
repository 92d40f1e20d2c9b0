"""The retrieval API in a subprocess for benchmarks, on its own database and index prefix."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx


@contextlib.contextmanager
def serve_api(port: int, database: str, index_prefix: str) -> Iterator[str]:
    env = dict(os.environ, GROUNDWORK_DATABASE_NAME=database, GROUNDWORK_INDEX_PREFIX=index_prefix)
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "uvicorn"),
            "retrieval_api.main:app",
            "--port",
            str(port),
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
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)
