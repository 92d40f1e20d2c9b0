"""Start and stop the whole platform: engines, Dagster (webserver + daemon)
and the retrieval API. Reports when each is ready; stops everything in
reverse order on Ctrl-C; refuses clearly when already running."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from resources.composition.platform import EngineEndpoints, ensure_engines
from resources.composition.settings import PROJECT_ROOT, GroundworkSettings
from resources.dagster_glue.instance import write_instance_config
from resources.dagster_glue.object_compute_logs import compute_logs_for
from resources.engines.nginx import EmbeddedNginx

console = Console()
#: the code location's name, as in workspace.yaml (runs and sensors are keyed by it)
CODE_LOCATION = "groundwork"


class AlreadyRunning(RuntimeError):
    pass


@dataclass
class Supervisor:
    settings: GroundworkSettings
    endpoints: EngineEndpoints | None = None
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    commands: dict[str, tuple[list[str], str]] = field(default_factory=dict)
    restarts: dict[str, int] = field(default_factory=dict)
    clamd: Any = None
    inbox_watcher: Any = None
    code_socket: Path | None = None
    #: Ctrl-C presses (or SIGTERMs) received while stopping, and whether they forced it
    _stop_requests: int = field(default=0, init=False)
    _forced: bool = field(default=False, init=False)

    @property
    def lock_file(self) -> Path:
        return self.settings.home / "supervisor.json"

    def _claim(self) -> None:
        self.settings.home.mkdir(parents=True, exist_ok=True)
        if self.lock_file.exists():
            try:
                info = json.loads(self.lock_file.read_text())
                os.kill(int(info["pid"]), 0)
            except (
                ValueError,
                KeyError,
                ProcessLookupError,
                PermissionError,
                json.JSONDecodeError,
            ):
                self.lock_file.unlink(missing_ok=True)
            else:
                raise AlreadyRunning(
                    f"Groundwork is already running (pid {info['pid']}): API {info.get('api')}, "
                    f"Dagster UI {info.get('ui')}. Stop it with Ctrl-C in its terminal first."
                )
        self.lock_file.write_text(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "api": f"http://127.0.0.1:{self.settings.api_port}",
                    "mcp": f"http://127.0.0.1:{self.settings.mcp_port}/mcp",
                    "ui": f"http://127.0.0.1:{self.settings.dagster_port}",
                }
            )
        )

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env["DAGSTER_HOME"] = str(self.settings.dagster_home)
        env["GROUNDWORK_HOME"] = str(self.settings.home)
        env["GROUNDWORK_INBOX"] = str(self.settings.inbox_dir)
        env["GROUNDWORK_ENGINES_MANAGED"] = "1"  # only the supervisor starts engines
        # registrations through the API ask Dagster for the ingest run at once
        env.setdefault("GROUNDWORK_DAGSTER_URL", f"http://127.0.0.1:{self.settings.dagster_port}")
        env.setdefault("OMP_THREAD_LIMIT", "1")
        # the supervisor's watcher asks for inbox runs as files arrive, so the
        # code location's inbox sensor is only the fallback walk (its interval)
        env["GROUNDWORK_INBOX_WATCHER"] = "1"
        return env

    def start_engines(self) -> EngineEndpoints:
        _install_interrupt_handlers()
        self._claim()
        started = time.monotonic()
        with console.status("Starting PostgreSQL + pgvector and OpenSearch ..."):
            self.endpoints = ensure_engines(self.settings)
        if self.endpoints.postgres is not None:
            self.timings["postgres_s"] = getattr(self.endpoints.postgres, "started_seconds", 0.0)
        if self.endpoints.opensearch is not None:
            self.timings["opensearch_s"] = self.endpoints.opensearch.started_seconds
        console.print(
            f"[green]ready[/] PostgreSQL ({self.timings.get('postgres_s', 0):.1f} s)"
            f"  OpenSearch {self.endpoints.opensearch_url} ({self.timings.get('opensearch_s', 0):.1f} s)"
            f"  [dim]total {time.monotonic() - started:.1f} s[/]"
        )
        write_instance_config(
            self.settings.dagster_home,
            self.endpoints.server_url,
            compute_logs=compute_logs_for(self.settings),
        )
        os.environ["DAGSTER_HOME"] = str(self.settings.dagster_home)
        orphaned = self._fail_orphaned_runs()
        if orphaned:
            console.print(
                f"[yellow]marked {len(orphaned)} unfinished run(s) of an earlier session failed[/]"
            )
        self._start_clamd()
        return self.endpoints

    def _start_clamd(self) -> None:
        """clamd belongs to the supervisor (not to the first upload that needs it),
        so it is stopped with everything else."""
        if self.settings.malware_scan != "clamd" or self.settings.clamd_socket is not None:
            return
        from resources.engines.clamd import EmbeddedClamd

        self.clamd = EmbeddedClamd(self.settings.home / "clamd", self.settings.clamd_database)
        with console.status("Starting clamd ..."):
            self.clamd.start()
        console.print("[green]ready[/] clamd")

    def _fail_orphaned_runs(self) -> list[str]:
        try:
            import dagster as dg

            from groundwork_cli.run_watchdog import fail_runs_of_an_earlier_session

            with dg.DagsterInstance.get() as instance:
                return fail_runs_of_an_earlier_session(instance)
        except Exception as exc:  # the sweep must never take the platform down
            console.print(f"[yellow]run sweep: {exc}[/]")
            return []

    def _spawn(self, name: str, command: list[str], log_name: str) -> None:
        self.commands[name] = (command, log_name)
        log_dir = self.settings.home / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        log = open(log_dir / log_name, "ab")  # noqa: SIM115 - lives as long as the process
        self.processes[name] = subprocess.Popen(
            command,
            cwd=PROJECT_ROOT,
            env=self.environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches us; we stop children in order
            preexec_fn=_default_signals,
        )

    def start_services(self) -> None:
        bin_dir = Path(sys.executable).parent
        self._spawn(
            "api",
            [
                str(bin_dir / "uvicorn"),
                "retrieval_api.main:app",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.settings.api_port),
                "--workers",
                str(self.settings.api_workers),
                "--log-level",
                "warning",
            ],
            "api.log",
        )
        workspace = self._start_code_server(bin_dir)
        self._spawn(
            "dagster",
            [
                str(bin_dir / "dagster"),
                "dev",
                "-w",
                str(workspace),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.settings.dagster_port),
            ],
            "dagster.log",
        )
        self._spawn(
            "mcp",
            [str(bin_dir / "groundwork"), "mcp", "--http", "--port", str(self.settings.mcp_port)],
            "mcp.log",
        )
        self._wait_http("api", f"http://127.0.0.1:{self.settings.api_port}/v1/health", 120)
        self._wait_http("mcp", f"http://127.0.0.1:{self.settings.mcp_port}/mcp", 120)
        self._wait_http(
            "dagster", f"http://127.0.0.1:{self.settings.dagster_port}/server_info", 180
        )
        self._watch_inbox()

    def _start_code_server(self, bin_dir: Path) -> Path:
        """One code server of our own, which the webserver and the daemon both
        use (a workspace naming its socket). From a `python_module` workspace
        `dagster dev` runs a proxy code server in front of the real one, a
        process whose gRPC threads cost ~2% of a core at idle and relay every
        sensor evaluation. Returns the workspace file."""
        if self.code_socket is None:
            # a short path: a Unix socket's is capped at 107 bytes, a home's may be long
            self.code_socket = Path(tempfile.mkdtemp(prefix="gw-code-")) / "grpc.sock"
        self._spawn(
            "code",
            [
                str(bin_dir / "dagster"),
                "api",
                "grpc",
                "--module-name",
                "pipelines.definitions",
                "--attribute",
                "defs",
                "--location-name",
                CODE_LOCATION,
                "--socket",
                str(self.code_socket),
                "--log-level",
                "warning",
            ],
            "code-server.log",
        )
        self._wait_code_server(180)
        self.settings.dagster_home.mkdir(parents=True, exist_ok=True)
        workspace = self.settings.dagster_home / "workspace.yaml"
        workspace.write_text(
            json.dumps(
                {
                    "load_from": [
                        {
                            "grpc_server": {
                                "socket": str(self.code_socket),
                                "location_name": CODE_LOCATION,
                            }
                        }
                    ]
                }
            )
        )
        return workspace

    def _wait_code_server(self, timeout: float) -> None:
        from dagster._grpc.client import DagsterGrpcClient

        assert self.code_socket is not None
        started = time.monotonic()
        client = DagsterGrpcClient(socket=str(self.code_socket))
        with console.status("Loading the Dagster code location ..."):
            while time.monotonic() - started < timeout:
                process = self.processes["code"]
                if process.poll() is not None:
                    raise RuntimeError(
                        f"the code server exited with {process.returncode}; see "
                        f"{self.settings.home / 'logs' / 'code-server.log'}"
                    )
                if self.code_socket.exists():
                    with contextlib.suppress(Exception):  # not serving yet
                        client.ping("ready")
                        self.timings["code_s"] = time.monotonic() - started
                        console.print(
                            f"[green]ready[/] code location ({self.timings['code_s']:.1f} s)"
                        )
                        return
                time.sleep(0.3)
        raise RuntimeError(f"the code server did not answer within {timeout:.0f} s")

    def _watch_inbox(self) -> None:
        """Inbox changes ask Dagster for their run at once (the sensor's 5 s
        loop was half of inbox -> searchable); the sensor stays the guarantee."""
        from groundwork_cli.inbox_watch import InboxWatcher
        from resources.orchestration.ingest_trigger import DagsterIngestTrigger

        url = self.environment()["GROUNDWORK_DAGSTER_URL"]
        self.inbox_watcher = InboxWatcher(
            self.settings.inbox_dir, DagsterIngestTrigger(url), home=self.settings.home
        )
        self.inbox_watcher.start()
        console.print(f"[green]ready[/] inbox watcher {self.settings.inbox_dir}")

    def _wait_http(self, name: str, url: str, timeout: float) -> None:
        started = time.monotonic()
        with console.status(f"Waiting for {name} at {url} ..."):
            while time.monotonic() - started < timeout:
                process = self.processes[name]
                if process.poll() is not None:
                    raise RuntimeError(
                        f"{name} exited with {process.returncode}; see {self.settings.home / 'logs'}"
                    )
                try:
                    with urllib.request.urlopen(url, timeout=2) as response:
                        status = response.status
                except urllib.error.HTTPError as answered:  # a 4xx is an answer (MCP wants a POST)
                    status = answered.code
                except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                    status = 599
                if status < 500:
                    self.timings[f"{name}_s"] = time.monotonic() - started
                    console.print(
                        f"[green]ready[/] {name} {url} ({self.timings[f'{name}_s']:.1f} s)"
                    )
                    return
                time.sleep(0.5)
        raise RuntimeError(f"{name} did not answer at {url} within {timeout:.0f} s")

    def stop(self) -> None:
        """Reverse order: services (SIGINT: `dagster dev` stops only on it), then
        engines. Ctrl-C while stopping cannot abort it: it used to raise in the
        middle of waiting for `dagster dev`, and the API and MCP servers (each
        in its own session, so the terminal's Ctrl-C never reaches them) ran on
        without a parent. A second Ctrl-C is ignored with a message; a third
        forces: the services left are killed instead of waited for, and the
        engines are still stopped."""
        self._enter_shutdown()
        if self.inbox_watcher is not None:
            self.inbox_watcher.stop()
        for name in ("dagster", "code", "mcp", "api"):
            process = self.processes.get(name)
            if process is None or process.poll() is not None:
                continue
            graceful = signal.SIGINT if name == "dagster" else signal.SIGTERM
            try:
                os.killpg(process.pid, signal.SIGKILL if self._forced else graceful)
            except ProcessLookupError:
                continue
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
            _stop_group_leftovers(process.pid)
            console.print(f"[dim]stopped {name}[/]")
        if self.code_socket is not None:
            shutil.rmtree(self.code_socket.parent, ignore_errors=True)
        if self.clamd is not None:
            self.clamd.stop()
            console.print("[dim]stopped clamd[/]")
        if self.endpoints is not None:
            if self.endpoints.opensearch is not None:
                self.endpoints.opensearch.stop()
                console.print("[dim]stopped OpenSearch[/]")
            if self.endpoints.postgres is not None:
                self.endpoints.postgres.stop()
                console.print("[dim]stopped PostgreSQL[/]")
            if self.endpoints.seaweedfs is not None:
                self.endpoints.seaweedfs.stop()
                console.print("[dim]stopped SeaweedFS[/]")
        self.lock_file.unlink(missing_ok=True)

    def _enter_shutdown(self) -> None:
        """From the first Ctrl-C on, further ones (and SIGTERM) are counted
        instead of raised: nothing can interrupt the stop half way."""
        signal.signal(signal.SIGINT, self._interrupted_while_stopping)
        signal.signal(signal.SIGTERM, self._interrupted_while_stopping)

    def _interrupted_while_stopping(self, signum: int, frame: object) -> None:
        self._stop_requests += 1
        if self._stop_requests == 1:
            console.print(
                "[yellow]Already stopping: every service and engine is being stopped in "
                "order. Press Ctrl-C once more to force it.[/]"
            )
            return
        if self._forced:
            return
        self._forced = True
        console.print(
            "[yellow]Forcing: the services left are killed; the engines are still stopped.[/]"
        )
        for process in self.processes.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)

    def wait_for_interrupt(self) -> None:
        """Keep everything running until Ctrl-C: a child that exits is restarted
        with backoff (1 s doubling to 30 s) and the crash logged; an engine that
        stopped is started again, and so is an engine's nginx front."""
        try:  # from the first statement: a Ctrl-C during the message is a stop, too
            _install_interrupt_handlers()
            console.print("[bold]Running.[/] Press Ctrl-C to stop everything.")
            while True:
                self.heal_once()
                time.sleep(1)
        except KeyboardInterrupt:
            self._enter_shutdown()  # before anything else: a second Ctrl-C may follow at once
            console.print("\nStopping ...")

    def heal_once(self) -> list[str]:
        """One pass: restart exited children, start stopped engines and fronts (a run whose
        worker died is failed by Dagster's run monitoring, through the warm
        launcher's health check). Returns the names of the children restarted."""
        restarted = []
        for name in list(self.processes):
            if self.processes[name].poll() is not None:
                self._restart(name)
                restarted.append(name)
        self._heal_engines()
        return restarted

    def _restart(self, name: str) -> None:
        process = self.processes[name]
        count = self.restarts.get(name, 0) + 1
        self.restarts[name] = count
        delay = min(30.0, 2.0 ** (count - 1))
        message = f"{name} exited with {process.returncode}; restart {count} in {delay:.0f} s"
        console.print(f"[red]{message}[/]")
        with (self.settings.home / "logs" / "supervisor.log").open("a") as log:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}\n")
        _stop_group_leftovers(process.pid, timeout=5)
        time.sleep(delay)
        command, log_name = self.commands[name]
        self._spawn(name, command, log_name)

    def _heal_engines(self) -> None:
        endpoints = self.endpoints
        if endpoints is None:
            return
        down = self._start_stopped(
            [endpoints.postgres, endpoints.opensearch, endpoints.seaweedfs, self.clamd]
        )
        # Then the fronts through which other hosts reach an engine (GROUNDWORK_
        # POSTGRES_LISTEN / _OPENSEARCH_LISTEN): an engine started above started
        # its front too, so these are looked at after it.
        self._start_stopped(self._fronts())
        if down and any(e is endpoints.postgres for e in down):
            # A restarted PostgreSQL may listen on another port: Dagster's
            # storage URL is rewritten and the services reconnect from scratch.
            self.endpoints = ensure_engines(self.settings)
            write_instance_config(
                self.settings.dagster_home,
                self.endpoints.server_url,
                compute_logs=compute_logs_for(self.settings),
            )
            for name, process in list(self.processes.items()):
                if process.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGTERM)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(timeout=20)
                    _stop_group_leftovers(process.pid, timeout=5)
                command, log_name = self.commands[name]
                self._spawn(name, command, log_name)

    def _start_stopped(self, engines: list[Any]) -> list[Any]:
        """Start each engine that is not running, logged; return those started."""
        down = [engine for engine in engines if engine is not None and not engine.is_running()]
        for engine in down:
            name = str(engine) if isinstance(engine, EmbeddedNginx) else type(engine).__name__
            console.print(f"[red]{name} is not running; starting it again[/]")
            with (self.settings.home / "logs" / "supervisor.log").open("a") as log:
                log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {name} down; restarted\n")
            engine.start()
        return down

    def _fronts(self) -> list[EmbeddedNginx | None]:
        """The engines' nginx fronts, where authentication is on."""
        endpoints = self.endpoints
        if endpoints is None:
            return []
        opensearch = endpoints.opensearch.front if endpoints.opensearch is not None else None
        return [
            endpoints.postgres.front if endpoints.postgres is not None else None,
            opensearch.server() if opensearch is not None else None,
        ]


def _stop_group_leftovers(pgid: int, timeout: float = 10.0) -> None:
    """Children that outlive their parent (`dagster dev` leaves its code server
    running after SIGINT) are still in its process group: end them too."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _install_interrupt_handlers() -> None:
    """Explicit, because a shell that starts us in the background (or a wrapper
    such as `uv run`) hands us SIGINT/SIGTERM ignored, and children inherit that."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise_interrupt)


def _default_signals() -> None:
    """In a child before exec: `dagster dev` stops only on SIGINT, so it must not
    inherit an ignored SIGINT."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
