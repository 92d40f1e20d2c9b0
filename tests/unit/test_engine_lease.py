"""The test home's engines are stopped by the last session out (testbed/engine_lease.py)."""

from __future__ import annotations

import threading
from pathlib import Path

from testbed.engine_lease import EngineLease


def test_a_session_ending_while_another_runs_leaves_the_engines(tmp_path: Path) -> None:
    first, second = EngineLease(tmp_path), EngineLease(tmp_path)
    assert not first.last_out()  # the second still uses them
    first.release()
    assert second.last_out() and second.last_out()  # alone: it stops them
    second.release()


def test_a_session_starting_while_the_last_one_stops_them_waits(tmp_path: Path) -> None:
    """The last session holds the lease while it stops the engines; one that
    starts meanwhile waits for the stop, then starts them again itself."""
    last = EngineLease(tmp_path)
    assert last.last_out()
    started = threading.Event()

    def start() -> None:
        EngineLease(tmp_path).release()
        started.set()

    threading.Thread(target=start, daemon=True).start()
    assert not started.wait(0.3)  # the engines are being stopped
    last.release()
    assert started.wait(5)
