"""Stopping a daemon the project started, by its pid file: SIGTERM, wait,
SIGKILL only after the timeout, and reap it if it is our child."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def stop_by_pid_file(pid_file: Path, timeout: float) -> None:
    try:
        pid = int(pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        pid_file.unlink(missing_ok=True)
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pid_file.unlink(missing_ok=True)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)
