"""What a running stack costs while nothing happens.

    ./run demo                                   # in another terminal
    uv run python bench/idle.py [--seconds 600] [--home .groundwork]
    uv run python bench/idle.py --seconds 7200 --every 600 --tenant scifact

Samples, before and after the window, the CPU time of every process of the
stack (the processes whose command line names the home, PostgreSQL's and
OpenSearch's, and the home's supervisor, named by its supervisor.json, with
its descendants, Dagster's and the API's; children that exited are counted
into their parents by the kernel) and PostgreSQL's per-database session
counter (every new connection). Prints CPU seconds per process, the total as a share of one
core and of the machine, new connections per second per database, and the runs
created in the window by job (a window without a schedule's tick has none; an
hourly rescan is one `tenant_ingest` per inbox tenant, and an evaluation there
means idle work was done that nothing asked for).

`--every` prints the same share for each interval of the window, with the
machine's load average, so a long window shows when something else ran beside
the stack. `--tenant` prints each `tenant_ingest` run of that tenant in the
window with its registration step's time (the rescan's cost: issue #33's goal
is <= 2 s for the SciFact tenant) and the run's.

`--prepare` writes issue #33's idle set-up into a home that has not started
yet, then exits: the SciFact corpus as one Markdown file per abstract in the
`scifact` tenant's inbox folder, 99 small tenants of one file each, and a
golden set of the first 300 SciFact train queries. Then, in order:

    GROUNDWORK_HOME=<home> groundwork up               # ingests all 100 tenants
    GROUNDWORK_HOME=<home> groundwork eval --golden <home>/scifact-golden.jsonl --tenant scifact
    uv run python bench/idle.py --home <home> --seconds 7200 --every 600 --tenant scifact
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
    # this bench names the home too: neither it nor what it runs is the stack
    procs.pop(os.getpid(), None)
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


def _dagster(home: Path) -> psycopg.Connection:
    return psycopg.connect(
        host=str(home / "pgdata"), port=5432, user="postgres", dbname="dagster", autocommit=True
    )


def _runs_created(home: Path, since: float) -> dict[str, int]:
    """Runs created since `since`, by job."""
    with _dagster(home) as conn:
        rows = conn.execute(
            "SELECT pipeline_name, count(*) FROM runs WHERE create_timestamp > to_timestamp(%s)"
            " GROUP BY pipeline_name",
            (since,),
        ).fetchall()
    return {str(job): int(count) for job, count in rows}


def _rescans(home: Path, tenant: str, since: float) -> list[tuple[str, str, float, float]]:
    """Each `tenant_ingest` run of `tenant` created since `since`: its start
    (UTC), status, registration step seconds and run seconds (from the run's
    own step events; a run still going has no end and is left out)."""
    with _dagster(home) as conn:
        rows = conn.execute(
            """
            SELECT r.run_id, r.status, r.start_time, r.end_time,
                   (SELECT extract(epoch FROM max(e.timestamp) FILTER (
                               WHERE e.dagster_event_type IN ('STEP_SUCCESS', 'STEP_FAILURE'))
                             - min(e.timestamp) FILTER (WHERE e.dagster_event_type = 'STEP_START'))
                      FROM event_logs e
                     WHERE e.run_id = r.run_id AND e.step_key = 'source_registrations')
              FROM runs r JOIN run_tags t ON t.run_id = r.run_id
             WHERE r.pipeline_name = 'tenant_ingest' AND t.key = 'dagster/partition'
               AND t.value = %s AND r.create_timestamp > to_timestamp(%s)
               AND r.end_time IS NOT NULL
             ORDER BY r.start_time
            """,
            (tenant, since),
        ).fetchall()
    return [
        (
            time.strftime("%H:%M:%S", time.gmtime(start)),
            str(status),
            float(registration) if registration is not None else float("nan"),
            float(end) - float(start),
        )
        for _, status, start, end, registration in rows
    ]


def _share(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> float:
    """CPU seconds the stack spent between two samples (a process that
    started between them counts from zero)."""
    return sum(seconds - before.get(pid, ("", 0.0))[1] for pid, (_, seconds) in after.items())


def _prepare(home: Path, beir: Path, tenants: int, queries: int) -> None:
    """The issue's tenants as inbox folders and the SciFact golden set, written
    before the stack starts so its first runs ingest them."""
    from evals.beir import load_qrels, load_queries
    from evals.golden import GoldenQuery, write_golden
    from evals.retrieval import write_corpus

    if not (beir / "corpus.jsonl").is_file():
        raise SystemExit(f"no BEIR folder at {beir} (SciFact: ../shared/data/scifact)")
    inbox = Path(os.environ.get("GROUNDWORK_INBOX", str(home / "inbox")))
    written = write_corpus(beir, inbox, "scifact")
    for n in range(1, tenants + 1):
        small = inbox / f"team-{n:02d}"
        small.mkdir(parents=True, exist_ok=True)
        (small / "notes.md").write_text(
            f"# Team {n:02d} notes\n\nThe team {n:02d} runbook: restart the queue worker"
            f" when its backlog passes {100 * n} messages.\n",
            encoding="utf-8",
        )
    texts, qrels = load_queries(beir), load_qrels(beir, "train")
    golden = write_golden(
        (
            GoldenQuery(query_id, texts[query_id], qrels[query_id])
            for query_id in sorted(qrels, key=int)[:queries]
        ),
        home / "scifact-golden.jsonl",
    )
    print(f"{written} SciFact files in {inbox / 'scifact'}, {tenants} small tenants in {inbox}")
    print(f"golden set: {golden} ({min(queries, len(qrels))} queries)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--home", type=Path, default=ROOT / ".groundwork")
    parser.add_argument("--every", type=float, help="seconds per interval line (default: none)")
    parser.add_argument("--tenant", help="print this tenant's rescans in the window")
    parser.add_argument("--prepare", action="store_true", help="write the idle set-up and exit")
    parser.add_argument("--beir", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--tenants", type=int, default=99, help="with --prepare: small tenants")
    parser.add_argument("--queries", type=int, default=300, help="with --prepare: golden queries")
    args = parser.parse_args()
    home = args.home.resolve()
    if args.prepare:
        _prepare(home, args.beir, args.tenants, args.queries)
        return
    cores = os.cpu_count() or 1
    cpu_before, sessions_before = _cpu_seconds(home), _sessions(home)
    started = time.time()
    deadline = started + args.seconds
    mark, cpu_mark = started, cpu_before
    while (now := time.time()) < deadline:
        time.sleep(min(args.every or args.seconds, deadline - now))
        if args.every:
            cpu_now, now = _cpu_seconds(home), time.time()
            used_now = _share(cpu_mark, cpu_now)
            runs = _runs_created(home, mark)
            print(
                f"{time.strftime('%H:%M:%S')} {now - mark:5.0f} s: {used_now:7.2f} CPU-s"
                f" = {100 * used_now / (now - mark):5.1f}% of one core"
                f" = {100 * used_now / (now - mark) / cores:5.2f}% of the machine,"
                f" load {os.getloadavg()[0]:.2f}, runs {runs or 'none'}",
                flush=True,
            )
            mark, cpu_mark = now, cpu_now
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
    runs = _runs_created(home, started)
    print(
        f"idle window {elapsed:.0f} s, {sum(runs.values())} runs created in it"
        + (
            f" ({', '.join(f'{job} {count}' for job, count in sorted(runs.items()))})"
            if runs
            else ""
        )
    )
    for seconds, pid, command in used[:12]:
        print(f"  {seconds:8.2f} CPU-s  {pid:>7}  {command}")
    print(
        f"  total {total:.2f} CPU-s = {100 * total / elapsed:.1f}% of one core"
        f" = {100 * total / elapsed / cores:.2f}% of the machine ({cores} cores)"
    )
    print(f"  evaluations: {runs.get('evaluate_retrieval', 0)}")
    if args.tenant:
        for start, status, registration, run in _rescans(home, args.tenant, started):
            print(
                f"  {args.tenant} tenant_ingest at {start} UTC {status}:"
                f" registration {registration:.2f} s, run {run:.1f} s"
            )
    for name, count in sorted(sessions_after.items()):
        opened = count - sessions_before.get(name, count)
        if opened:
            print(f"  new PostgreSQL connections to {name}: {opened} ({opened / elapsed:.1f}/s)")


if __name__ == "__main__":
    main()
