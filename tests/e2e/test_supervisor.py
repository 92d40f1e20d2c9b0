"""The supervisor heals (issue 18): a child killed with SIGKILL is started
again with backoff and the crash is logged, without a human; the old code
stopped everything when one child died."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from groundwork_cli.supervisor import Supervisor
from resources.composition.settings import GroundworkSettings


def test_a_killed_child_is_restarted_and_the_crash_logged(tmp_path: Path) -> None:
    settings = dataclasses.replace(GroundworkSettings.from_env(), home=tmp_path)
    supervisor = Supervisor(settings)
    supervisor._spawn("api", [sys.executable, "-c", "import time; time.sleep(120)"], "api.log")
    first = supervisor.processes["api"]
    try:
        assert supervisor.heal_once() == []  # healthy: nothing to do
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        started = time.monotonic()
        assert supervisor.heal_once() == ["api"]
        second = supervisor.processes["api"]
        assert second.pid != first.pid and second.poll() is None
        assert time.monotonic() - started < 15
        log = (tmp_path / "logs" / "supervisor.log").read_text()
        assert "api exited with -9; restart 1" in log
    finally:
        for process in supervisor.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)


def test_a_supervised_process_never_starts_an_engine(tmp_path: Path) -> None:
    """Only the supervisor starts engines: after OpenSearch was killed, the MCP
    server, the API and the supervisor all started one, and the losers crash-
    looped on the data directory's lock."""
    import pytest

    from groundwork.errors import EngineUnavailable
    from resources.composition.platform import ensure_engines
    from resources.engines.postgres import EmbeddedPostgres

    settings = dataclasses.replace(
        GroundworkSettings.from_env(), home=tmp_path, engines_managed=True
    )
    with pytest.raises(EngineUnavailable, match="supervisor"):
        ensure_engines(settings)
    assert not EmbeddedPostgres(settings.pgdata).is_running()
    assert not (tmp_path / "pgdata").exists()
    env = Supervisor(settings).environment()
    assert env["GROUNDWORK_ENGINES_MANAGED"] == "1"
    assert GroundworkSettings.from_env(env).engines_managed


class _SupervisorProcess:
    """`tests/e2e/supervisor_under_signals.py` in its own process: its output
    read as it comes, its children's pids, Ctrl-C sent as the terminal does."""

    def __init__(self, home: Path, child_stop_seconds: float) -> None:
        import json
        import subprocess
        import threading

        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.e2e.supervisor_under_signals",
                str(home),
                str(child_stop_seconds),
            ],
            cwd=Path(__file__).resolve().parents[2],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=dict(os.environ, COLUMNS="200"),
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.children: dict[str, int] = json.loads(self.wait_for("{"))
        self.wait_for("Running.")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if text in line:
                    return line
            time.sleep(0.05)
        raise AssertionError(f"no {text!r} in {self.lines}")

    def ctrl_c(self) -> None:
        os.kill(self.process.pid, signal.SIGINT)

    def alive_children(self) -> list[str]:
        import psutil

        alive = []
        for name, pid in self.children.items():
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(name)
            except psutil.NoSuchProcess:
                pass
        return alive

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        for pid in self.children.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_second_ctrl_c_while_stopping_is_ignored_and_every_child_stops(tmp_path: Path) -> None:
    """It used to abort the stop: `dagster dev` was left stopping on its own,
    and the API and MCP servers ran on without a parent."""
    supervisor = _SupervisorProcess(tmp_path, child_stop_seconds=2.0)
    try:
        supervisor.ctrl_c()
        supervisor.wait_for("Stopping")
        time.sleep(0.5)  # dagster is stopping (2 s)
        supervisor.ctrl_c()
        supervisor.wait_for("Already stopping")
        assert supervisor.process.wait(timeout=60) == 0
        supervisor.wait_for("stopped everything")
        assert [line for line in supervisor.lines if line.startswith("stopped ")] == [
            "stopped dagster",
            "stopped mcp",
            "stopped api",
            "stopped everything",
        ]
        assert supervisor.alive_children() == []
    finally:
        supervisor.end()


def test_a_third_ctrl_c_forces_the_stop_and_still_stops_every_child(tmp_path: Path) -> None:
    supervisor = _SupervisorProcess(tmp_path, child_stop_seconds=20.0)
    try:
        started = time.monotonic()
        supervisor.ctrl_c()
        supervisor.wait_for("Stopping")
        time.sleep(0.5)
        supervisor.ctrl_c()
        supervisor.wait_for("Already stopping")
        supervisor.ctrl_c()
        supervisor.wait_for("Forcing")
        assert supervisor.process.wait(timeout=60) == 0
        # each child would have taken 20 s to stop; forced, none is waited for
        assert time.monotonic() - started < 15
        deadline = time.monotonic() + 5
        while supervisor.alive_children() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert supervisor.alive_children() == []
    finally:
        supervisor.end()


def test_the_webserver_and_the_daemon_share_one_code_server_without_a_proxy(
    tmp_path: Path,
) -> None:
    """`dagster dev` given a `python_module` workspace runs a proxy code server
    (`dagster code-server start`) in front of the real one: a process whose
    gRPC threads cost ~2% of a core at idle and that relays every sensor
    evaluation. The supervisor starts the one code server itself and hands
    `dagster dev` a workspace naming its socket."""
    import yaml
    from dagster._grpc.client import DagsterGrpcClient

    settings = dataclasses.replace(GroundworkSettings.from_env(), home=tmp_path)
    supervisor = Supervisor(settings)
    try:
        workspace = supervisor._start_code_server(Path(sys.executable).parent)
        code = supervisor.processes["code"]
        assert code.poll() is None
        command = supervisor.commands["code"][0]
        assert command[1:3] == ["api", "grpc"] and "code-server" not in command
        entry = yaml.safe_load(workspace.read_text())["load_from"][0]["grpc_server"]
        assert entry == {"socket": str(supervisor.code_socket), "location_name": "groundwork"}
        client = DagsterGrpcClient(socket=entry["socket"])
        assert client.ping("x")["echo"] == "x"
        names = client.list_repositories()
        assert names is not None
    finally:
        for process in supervisor.processes.values():
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=20)
        if supervisor.code_socket is not None:
            shutil.rmtree(supervisor.code_socket.parent, ignore_errors=True)
