"""Nothing a run produces is tracked in git.

A committed demo run once carried a PostgreSQL data directory, OpenSearch
segments, pid files and a file of live API keys; these checks read what git
tracks (not the working tree), so a new run folder fails here before review.
"""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
MAX_TRACKED_BYTES = 5 * 1024 * 1024
# folder names that only a run creates: engine data, Dagster storage, logs, state homes
RUN_FOLDERS = {"pgdata", "compute_logs", "eval-reports", "nodes"}  # nodes: OpenSearch data
RUN_SUFFIXES = {".pid", ".lock", ".pgpass"}
LOCK_FILES = {"uv.lock"}  # the dependency lock is source, not a process lock


def _tracked() -> list[PurePosixPath]:
    listing = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    ).stdout.decode()
    return [PurePosixPath(p) for p in listing.split("\0") if p]


def test_no_state_home_is_tracked() -> None:
    """`.groundwork*` folders are GROUNDWORK_HOMEs (demo, test, scale, ...)."""
    offenders = [str(p) for p in _tracked() if p.parts[0].startswith(".groundwork")]
    assert offenders[:5] == [], f"{len(offenders)} tracked files under a GROUNDWORK_HOME"


def test_no_run_artifact_is_tracked() -> None:
    offenders = [
        str(p)
        for p in _tracked()
        if (p.suffix in RUN_SUFFIXES and p.name not in LOCK_FILES)
        or RUN_FOLDERS.intersection(p.parts[:-1])
    ]
    assert offenders[:5] == [], f"{len(offenders)} tracked files look like a run's state"


def test_no_tracked_file_exceeds_five_megabytes() -> None:
    offenders = [
        f"{p} ({size} bytes)"
        for p in _tracked()
        if (ROOT / p).is_file() and (size := (ROOT / p).stat().st_size) > MAX_TRACKED_BYTES
    ]
    assert offenders == []


def test_run_homes_are_ignored() -> None:
    """A fresh run home with any suffix (`.groundwork-anything/`) is ignored."""
    for path in (".groundwork-somerun/pgdata/x", ".groundwork/x", "anywhere/postmaster.pid"):
        probe = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, timeout=60)
        assert probe.returncode == 0, f"{path} is not ignored"
