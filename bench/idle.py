"""What a running stack costs while nothing happens.

    ./run demo                                   # in another terminal
    uv run python bench/idle.py [--seconds 600] [--home .groundwork]

Samples, before and after the window, the CPU time of every process of the
stack (the processes whose command line names the home, PostgreSQL's and
OpenSearch's, and the home's supervisor, named by its supervisor.json, with
its descendants, Dagster's and the API's; children that exited are counted
into their parents by the kernel) and PostgreSQL's per-database session
counter (every new connection). Prints CPU seconds per process, the total as a share of one
core, new connections per second per database, and the runs created in the
window (an idle window has none: a run means the window was not idle).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
#: the supervisors: every process of the stack is one of theirs or names the home
SUPERVISORS = ("groundwork demo", "groundwork up")


def _cpu_seconds(home: Path) -> dict[int, tuple[str, float]]:
    """The stack's processes: those naming the home (its engines), the
    supervisor's (`groundwork demo|up`) and every descendant of either. Other
    processes on the machine (another home's engines, a test run, an editor's
    type checker) are not the stack's, even when their command line mentions
    Dagster or the API's module."""
    ticks = os.sysconf("SC_CLK_TCK")
    names_home = re.compile(re.escape(str(home)) + r"(?=[/\s]|$)")
    procs: dict[int, tuple[str, int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            command = (
                Path(f"/proc/{entry}/cmdline")
                .read_bytes()
                .replace(b"\0", b" ")
                .decode(errors="replace")
            )
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime, stime, and the exited children's cutime, cstime
        used = sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks
        procs[int(entry)] = (command, int(fields[1]), used)
    supervisor = _supervisor_pid(home)
    roots = {
        pid
        for pid, (command, _, _) in procs.items()
        if names_home.search(command)
        or (pid == supervisor and any(name in command for name in SUPERVISORS))
    }
    found: dict[int, tuple[str, float]] = {}
    for pid, (command, _, used) in procs.items():
        ancestor = pid
        while ancestor in procs and ancestor not in roots:
            ancestor = procs[ancestor][1]
        if ancestor in roots:
            found[pid] = (command[:72], used)
    return found


def _supervisor_pid(home: Path) -> int | None:
    """The supervisor of this home (its lock file names it): another home's
    supervisor on the machine (a second stack, a test's) is not this stack."""
    try:
        return int(json.loads((home / "supervisor.json").read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


def _sessions(home: Path) -> dict[str, int]:
    socket = home / "pgdata"
    with psycopg.connect(
        host=str(socket), port=5432, user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        rows = conn.execute(
            "SELECT datname, sessions FROM pg_stat_database WHERE datname IS NOT NULL"
        ).fetchall()
    return {str(name): int(count) for name, count in rows}


def _runs_created(home: Path, since: float) -> int:
    with psycopg.connect(
        host=str(home / "pgdata"), port=5432, user="postgres", dbname="dagster", autocommit=True
    ) as conn:
        row = conn.execute(
            "SELECT count(*) FROM runs WHERE create_timestamp > to_timestamp(%s)", (since,)
        ).fetchone()
    return int(row[0]) if row else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--home", type=Path, default=ROOT / ".groundwork")
    args = parser.parse_args()
    home = args.home.resolve()
    cpu_before, sessions_before = _cpu_seconds(home), _sessions(home)
    started = time.time()
    time.sleep(args.seconds)
    cpu_after, sessions_after = _cpu_seconds(home), _sessions(home)
    elapsed = time.time() - started
    used = sorted(
        (
            (seconds - cpu_before.get(pid, ("", 0.0))[1], pid, command)
            for pid, (command, seconds) in cpu_after.items()
        ),
        reverse=True,
    )
    total = sum(seconds for seconds, _, _ in used)
    print(f"idle window {elapsed:.0f} s, {_runs_created(home, started)} runs created in it")
    for seconds, pid, command in used[:12]:
        print(f"  {seconds:8.2f} CPU-s  {pid:>7}  {command}")
    print(f"  total {total:.2f} CPU-s = {100 * total / elapsed:.1f}% of one core")
    for name, count in sorted(sessions_after.items()):
        opened = count - sessions_before.get(name, count)
        if opened:
            print(f"  new PostgreSQL connections to {name}: {opened} ({opened / elapsed:.1f}/s)")


if __name__ == "__main__":
    main()
