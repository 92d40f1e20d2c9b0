"""A `groundwork worker` process as the several-hosts tests and the scale-out
bench start one: its own home and log, only the variables given, a session
of its own (its process group is its pid: what a fault test or bench kills)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from resources.composition.settings import PROJECT_ROOT


def start_worker_process(
    name: str,
    env: Mapping[str, str],
    home: Path,
    database: str,
    index_prefix: str,
    prefix: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """`prefix` runs the worker inside something: `taskset -c N` pins it to a
    core, `ip netns exec NS` puts it in a network namespace (both exec the
    worker in place, so the pid is still the worker's). Its output goes to
    `home/worker.log`."""
    home.mkdir(parents=True)
    log = open(home / "worker.log", "wb")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen(
        [
            *prefix,
            sys.executable,
            "-m",
            "groundwork_cli.main",
            "worker",
            "--name",
            name,
            "--database",
            database,
            "--index-prefix",
            index_prefix,
        ],
        env={**env, "GROUNDWORK_HOME": str(home)},
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=PROJECT_ROOT,
        start_new_session=True,
    )
