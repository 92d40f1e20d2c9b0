"""Whether a home's OpenSearch node process exists, answering or not: benches
stop only the nodes they started, and a loaded node that misses a health
probe's deadline must not be taken for one that was not running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from resources.engines.opensearch import EmbeddedOpenSearch


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
