"""The supervisor heals (issue 18): a child killed with SIGKILL is started
again with backoff and the crash is logged, without a human; the old code
stopped everything when one child died."""

from __future__ import annotations

import dataclasses
import os
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
