"""A daemon the project starts and stops by its pid file: started in a
session of its own, its output appended to a log, waited on until its probe
answers (or it exits, or the timeout passes); stopped with SIGTERM, a wait,
SIGKILL only after the timeout, and reaped if it is our child."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from groundwork.errors import EngineUnavailable


def spawn_daemon(
    command: Sequence[str], output: Path, pid_file: Path, cwd: Path
) -> subprocess.Popen[bytes]:
    """Start `command` in `cwd`, stdout and stderr appended to `output`, and
    record its pid in `pid_file`. A session of its own, so a Ctrl-C in the
    terminal that started it does not stop it: `stop_by_pid_file` does."""
    with open(output, "ab") as out:
        process = subprocess.Popen(
            list(command),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=cwd,
        )
    pid_file.write_text(str(process.pid))
    return process


def wait_until_ready(
    process: subprocess.Popen[bytes],
    probe: Callable[[], str | None],
    timeout: float,
    interval: float,
    name: str,
    log_path: Path,
) -> str | None:
    """None once `probe` answers None (ready) within `timeout`; else the
    probe's last reason. A daemon that exits first raises EngineUnavailable
    with the tail of `log_path`: its own words say why, not a timeout."""
    deadline = time.monotonic() + timeout
    why = "no answer yet"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
            raise EngineUnavailable(f"{name} exited with {process.returncode}:\n{tail}")
        why = probe() or ""
        if not why:
            return None
        time.sleep(interval)
    return why


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
