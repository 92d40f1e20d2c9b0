"""A real supervisor for tests/e2e/test_supervisor.py: three children that,
like `dagster dev`, take a while to stop, supervised until Ctrl-C and then
stopped by `Supervisor.stop`. Prints the children's pids as JSON first.
Usage: python -m tests.e2e.supervisor_under_signals <home> <seconds each child takes to stop>"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from groundwork_cli.supervisor import Supervisor
from resources.composition.settings import GroundworkSettings

CHILD = """
import signal, sys, time
def leave(*_):
    time.sleep({slow})
    sys.exit(0)
signal.signal(signal.SIGTERM, leave)
signal.signal(signal.SIGINT, leave)
while True:
    time.sleep(1)
"""


def main(home: Path, slow: float) -> None:
    settings = dataclasses.replace(GroundworkSettings.from_env(), home=home)
    supervisor = Supervisor(settings)
    try:
        for name in ("api", "dagster", "mcp"):
            supervisor._spawn(name, [sys.executable, "-c", CHILD.format(slow=slow)], f"{name}.log")
        print(json.dumps({n: p.pid for n, p in supervisor.processes.items()}), flush=True)
        supervisor.wait_for_interrupt()
    finally:
        supervisor.stop()
    print("stopped everything", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), float(sys.argv[2]))
