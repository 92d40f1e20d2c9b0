"""Jobs the warm launcher test launches (a module of their own: the run worker
reconstructs them from their code origin, as it does the real code location)."""

import json
import os
import sys
import time
from pathlib import Path

import dagster as dg


@dg.op(config_schema={"out": str, "sleep": float})
def report_worker(context: dg.OpExecutionContext) -> None:
    """Writes what the worker process looked like when the step began."""
    out = Path(context.op_config["out"])
    out.write_text(
        json.dumps({"pid": os.getpid(), "preloaded": "pdfplumber" in sys.modules}), "utf-8"
    )
    time.sleep(context.op_config["sleep"])


@dg.job(executor_def=dg.in_process_executor)
def worker_report_job() -> None:
    report_worker()
