"""Whether a home's OpenSearch node process exists, answering or not: benches
stop only the nodes they started, and a loaded node that misses a health
probe's deadline must not be taken for one that was not running. And the
start-up every embedded daemon shares (resources/engines/process.py): one that
exits before it answers is reported with its log, not as a timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from groundwork.errors import EngineUnavailable
from resources.engines.opensearch import EmbeddedOpenSearch
from resources.engines.process import spawn_daemon, stop_by_pid_file, wait_until_ready


def _node(home: Path) -> EmbeddedOpenSearch:
    # a port nobody answers on: the health probe fails whatever the process does
    return EmbeddedOpenSearch(home=home, launcher_dir=home, http_port=1, transport_port=2)


def test_a_silent_live_process_counts_as_running_a_dead_one_does_not(tmp_path: Path) -> None:
    node = _node(tmp_path)
    assert not node.has_process()  # no pid file

    silent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        os.kill(silent.pid, signal.SIGSTOP)  # hung: alive, answers nothing
        node.pid_file.parent.mkdir(parents=True, exist_ok=True)
        node.pid_file.write_text(str(silent.pid))
        assert not node.is_running()  # the probe alone would say "not running"
        assert node.has_process()
    finally:
        silent.kill()
        silent.wait()
    assert not node.has_process()  # the pid file outlived its process

    node.pid_file.write_text("not a pid")
    assert not node.has_process()


def test_a_daemon_that_exits_before_it_answers_says_why_in_its_own_words(
    tmp_path: Path,
) -> None:
    log, pid_file = tmp_path / "daemon.log", tmp_path / "daemon.pid"
    command = [sys.executable, "-c", "print('bad config line 3', flush=True); raise SystemExit(3)"]
    process = spawn_daemon(command, log, pid_file, tmp_path)
    assert pid_file.read_text() == str(process.pid)
    with pytest.raises(EngineUnavailable) as failed:
        wait_until_ready(process, lambda: "no answer", 20, 0.05, "the daemon", log)
    assert "the daemon exited with 3" in str(failed.value)
    assert "bad config line 3" in str(failed.value)


def test_a_daemon_that_never_answers_gives_the_probes_last_reason(tmp_path: Path) -> None:
    log, pid_file = tmp_path / "daemon.log", tmp_path / "daemon.pid"
    process = spawn_daemon(
        [sys.executable, "-c", "import time; time.sleep(60)"], log, pid_file, tmp_path
    )
    reasons = iter(["refused", "still refused"])
    try:
        why = wait_until_ready(process, lambda: next(reasons, "timed out"), 0.3, 0.05, "d", log)
        assert why == "timed out"
        answered = wait_until_ready(process, lambda: None, 5, 0.05, "d", log)
        assert answered is None
    finally:
        stop_by_pid_file(pid_file, 5)
    # wait, not poll: when SIGTERM is ignored (a disposition a child inherits,
    # seen in the clean-clone run) the stop ends in SIGKILL, which lands a moment later
    assert process.wait(timeout=10) is not None and not pid_file.exists()
