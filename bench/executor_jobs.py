"""The jobs bench/executors.py runs on each executor (imported by the
workers too: a step is reconstructed from this module on the host that runs
it). No platform code: they measure the executors, nothing else.

- `chain`: ten no-op steps one after another: the cost of one step
  (dispatch, the worker building the plan, events written) with nothing in it.
- `fan`: eight independent steps of CPU work (`BUSY_SECONDS` of this
  process's own CPU time each): throughput on the workers.
- `long`: one step of about 20 s that writes its pid where the bench can
  read it, so the bench can kill -9 the worker running it.
"""

import hashlib
import os
import time
from pathlib import Path

import dagster as dg
from dagster_dask import dask_executor

from resources.dagster_glue.celery_steps import distributed_executor

BUSY_SECONDS = 1.5
CHAIN = 10
FAN = 8
#: where `long` reports which process runs it (set by the bench)
PID_DIR_ENV = "GROUNDWORK_BENCH_PID_DIR"


def _busy(seconds: float) -> int:
    """Burn `seconds` of this thread's CPU time (not wall time: the machine is shared)."""
    end = time.thread_time() + seconds
    digest = b"x"
    rounds = 0
    while time.thread_time() < end:
        for _ in range(2000):
            digest = hashlib.sha256(digest).digest()
        rounds += 1
    return rounds


def _chain_ops() -> list[dg.OpDefinition]:
    ops = []
    for i in range(CHAIN):
        ins = {"after": dg.In(dg.Nothing)} if i else {}

        @dg.op(name=f"step_{i:02d}", ins=ins, out=dg.Out(dg.Nothing))
        def _noop() -> None:
            return None

        ops.append(_noop)
    return ops


CHAIN_OPS = _chain_ops()


@dg.op(out=dg.Out(dg.Nothing), config_schema={"index": int})
def busy_step() -> None:
    _busy(BUSY_SECONDS)


@dg.op(out=dg.Out(dg.Nothing))
def long_step(context: dg.OpExecutionContext) -> None:
    pid_dir = Path(os.environ[PID_DIR_ENV])
    attempt = len(list(pid_dir.glob("attempt-*")))
    (pid_dir / f"attempt-{attempt}-{os.getpid()}").write_text(context.run_id)
    for _ in range(40):
        time.sleep(0.5)


def _chain_graph() -> None:
    previous = None
    for op in CHAIN_OPS:
        previous = op(previous) if previous is not None else op()


def _fan_graph() -> None:
    for i in range(FAN):
        busy_step.alias(f"busy_{i}")()


def _long_graph() -> None:
    long_step()


def _jobs(prefix: str, executor: dg.ExecutorDefinition) -> dict[str, dg.JobDefinition]:
    resources = {"io_manager": dg.fs_io_manager}
    fan_config = {"ops": {f"busy_{i}": {"config": {"index": i}} for i in range(FAN)}}
    return {
        "chain": dg.GraphDefinition(
            name=f"{prefix}_chain", node_defs=CHAIN_OPS, dependencies=_chain_deps()
        ).to_job(executor_def=executor, resource_defs=resources),
        "fan": dg.graph(name=f"{prefix}_fan")(_fan_graph).to_job(
            executor_def=executor, resource_defs=resources, config=fan_config
        ),
        "long": dg.graph(name=f"{prefix}_long")(_long_graph).to_job(
            executor_def=executor, resource_defs=resources
        ),
    }


def _chain_deps() -> dict[str, dict[str, dg.DependencyDefinition]]:
    return {
        f"step_{i:02d}": {"after": dg.DependencyDefinition(f"step_{i - 1:02d}")}
        for i in range(1, CHAIN)
    }


CELERY_JOBS = _jobs("celery", distributed_executor(visibility_seconds=30))
DASK_JOBS = _jobs(
    "dask",
    dask_executor.configured(
        {"cluster": {"existing": {"address": {"env": "GROUNDWORK_DASK_SCHEDULER"}}}}
    ),
)
IN_PROCESS_JOBS = _jobs("inprocess", dg.in_process_executor)


@dg.op(out=dg.DynamicOut(int))
def fan_out():
    for i in range(3):
        yield dg.DynamicOutput(i, mapping_key=f"shard_{i}")


@dg.op
def double(value: int) -> int:
    return value * 2


@dg.op
def total(values: list[int]) -> int:
    return sum(values)


@dg.op(retry_policy=dg.RetryPolicy(max_retries=1))
def flaky(context) -> int:
    if context.retry_number == 0:
        raise RuntimeError("the first attempt fails, by design")
    return 1


def _dyn_graph() -> None:
    total(fan_out().map(double).collect())


def _retry_graph() -> None:
    flaky()


def _feature_jobs(prefix: str, executor: dg.ExecutorDefinition) -> dict[str, dg.JobDefinition]:
    resources = {"io_manager": dg.fs_io_manager}
    return {
        "dynamic": dg.graph(name=f"{prefix}_dynamic")(_dyn_graph).to_job(
            executor_def=executor, resource_defs=resources
        ),
        "retry": dg.graph(name=f"{prefix}_retry")(_retry_graph).to_job(
            executor_def=executor, resource_defs=resources
        ),
    }


CELERY_JOBS.update(_feature_jobs("celery", distributed_executor(visibility_seconds=30)))
DASK_JOBS.update(
    _feature_jobs(
        "dask",
        dask_executor.configured(
            {"cluster": {"existing": {"address": {"env": "GROUNDWORK_DASK_SCHEDULER"}}}}
        ),
    )
)
IN_PROCESS_JOBS.update(_feature_jobs("inprocess", dg.in_process_executor))
JOBS = {"celery": CELERY_JOBS, "dask": DASK_JOBS, "inprocess": IN_PROCESS_JOBS}


def job_for(executor: str, kind: str) -> dg.JobDefinition:
    return JOBS[executor][kind]
