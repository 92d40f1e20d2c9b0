"""End-to-end freshness through the running stack: a 10-page text PDF dropped
in the inbox (or completed through /v1/uploads) until /v1/search finds it.

    ./run demo            # in another terminal (keeps the stack up)
    uv run python bench/freshness_e2e.py [--rounds 20] [--via inbox|upload]

With the blobs in object storage (the stack started with
GROUNDWORK_BLOB_BACKEND=s3, its embedded SeaweedFS under the home):

    GROUNDWORK_HOME=.groundwork-s3 GROUNDWORK_BLOB_BACKEND=s3 ./run demo
    uv run python bench/freshness_e2e.py --home .groundwork-s3 --blobs s3 --via upload

`--blobs` is checked, not trusted: after the rounds the bench looks for the
first file's content-addressed key under the home's blob folder, which an S3
stack must not have and a filesystem stack must.

Each round prints where its seconds went, read from Dagster's own run records
(so the figures are the orchestrator's, not guesses):

- wait: file written -> the run that ingested it was created (sensor tick,
  or the upload trigger)
- start: run created -> run started, summed over runs (queue + worker start-up)
- work: run started -> run finished or the marker found (the asset steps)
- rest: hops between runs (a second run's sensor tick) and the search poll
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx
from fpdf import FPDF

ROOT = Path(__file__).resolve().parents[1]
WORDS = [
    "storage",
    "revenue",
    "quarter",
    "region",
    "memory",
    "hardware",
    "growth",
    "customer",
    "contract",
    "warehouse",
    "shipment",
    "invoice",
    "forecast",
    "margin",
    "supplier",
    "pricing",
    "audit",
]


def ten_page_pdf(marker: str, pages: int = 10) -> bytes:
    """A text-layer PDF of `pages` pages; the marker sits on the last page."""
    pdf = FPDF()
    for page in range(1, pages + 1):
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 16)
        pdf.cell(0, 10, f"Operations report, part {page}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 11)
        for line in range(12):
            words = [WORDS[(page * 7 + line * 3 + i) % len(WORDS)] for i in range(14)]
            pdf.multi_cell(0, 6, " ".join(words).capitalize() + ".", new_x="LMARGIN", new_y="NEXT")
        if page == pages:
            pdf.multi_cell(
                0, 6, f"The freshness marker is {marker}.", new_x="LMARGIN", new_y="NEXT"
            )
    return bytes(pdf.output())


def _upload(api: str, key: str, name: str, data: bytes) -> str:
    """Upload through a session; the new source's id."""
    headers = {"Authorization": f"Bearer {key}"}
    session = httpx.post(
        f"{api}/v1/uploads",
        json={"filename": name, "size": len(data), "media_type": "application/pdf"},
        headers=headers,
        timeout=10,
    ).json()
    upload_id = session["upload_id"]
    httpx.put(
        f"{api}/v1/uploads/{upload_id}",
        params={"offset": 0},
        content=data,
        headers=headers,
        timeout=30,
    ).raise_for_status()
    done = httpx.post(
        f"{api}/v1/uploads/{upload_id}/complete", json={}, headers=headers, timeout=60
    )
    done.raise_for_status()
    return str(done.json()["source_id"])


def _runs_since(instance: object, since: float) -> list[tuple[str, float, float, float]]:
    """(job, created, started, ended) of the acme runs created after `since`."""
    import dagster as dg

    assert isinstance(instance, dg.DagsterInstance)
    records = instance.get_run_records(
        filters=dg.RunsFilter(created_after=datetime.fromtimestamp(since, tz=UTC))
    )
    out = []
    for record in records:
        run = record.dagster_run
        if "acme" not in run.tags.get("dagster/partition", ""):
            continue
        out.append(
            (
                run.job_name,
                record.create_timestamp.timestamp(),
                record.start_time or 0.0,
                record.end_time or 0.0,
            )
        )
    return sorted(out, key=lambda r: r[1])


def _search_until_found(api: str, key: str, marker: str, started: float) -> None:
    """Keyword searches every 0.1 s until the marker's page is the first hit
    (at most 180 s after `started`)."""
    while time.monotonic() - started < 180:
        body = httpx.post(
            f"{api}/v1/search",
            json={"query": marker, "mode": "keyword"},
            headers={"Authorization": f"Bearer {key}"},
            timeout=10,
        ).json()
        if body.get("hits") and marker in body["hits"][0]["untrusted_text"]:
            return
        time.sleep(0.1)


def _drop_in_inbox(home: Path, marker: str, data: bytes) -> Path:
    target = home / "inbox" / "acme" / f"fresh-{marker}.pdf"
    partial = target.with_name(f".{target.name}.part")  # hidden: the inbox skips it
    partial.write_bytes(data)
    partial.rename(target)  # whole file at once: never a half-written PDF
    return target


def _breakdown(
    runs: list[tuple[str, float, float, float]], wall_started: float, found_at: float, total: float
) -> tuple[float, float, float, float]:
    """(wait, start, work, rest) of a round, from its runs' records (see the module docstring)."""
    wait = runs[0][1] - wall_started
    start = sum(max(0.0, r[2] - r[1]) for r in runs if r[2])
    work = sum(max(0.0, min(r[3] or found_at, found_at) - r[2]) for r in runs if r[2])
    seen = max(0.0, total - wait - start - work)  # hops between runs + polling
    return wait, start, work, seen


def _remove_bench_files(api: str, key: str, dropped: list[Path], uploaded: list[str]) -> None:
    """Leave the demo tenant as it was: the bench's files are deleted again."""
    for path in dropped:
        path.unlink(missing_ok=True)
    for source_id in uploaded:
        httpx.delete(
            f"{api}/v1/sources/{source_id}",
            headers={"Authorization": f"Bearer {key}"},
            timeout=10,
        )


def _print_summary(via: str, latencies: list[float], parts: dict[str, list[float]]) -> None:
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))]
    print(
        f"{via} -> searchable (10-page PDF): p50 {statistics.median(latencies):.1f} s, "
        f"p95 {p95:.1f} s, max {latencies[-1]:.1f} s ({len(latencies)} rounds)"
    )
    if parts["wait"]:
        print(
            "median breakdown: "
            + ", ".join(f"{k} {statistics.median(v):.1f} s" for k, v in parts.items())
        )


def _count_evaluations(instance: object, since: float, burst_ended: float) -> None:
    """The evaluations the burst caused: Dagster's runs of evaluate_retrieval
    for acme, during the rounds and after the debounce the sensor waits out."""
    from pipelines.evaluation_debounce import EVALUATION_DEBOUNCE_SECONDS
    from pipelines.sensors import EVALUATION_TICK_SECONDS

    wait = EVALUATION_DEBOUNCE_SECONDS + 3 * EVALUATION_TICK_SECONDS
    print(f"waiting {wait:.0f} s for the evaluation debounce ...", flush=True)
    time.sleep(wait)
    runs = [r for r in _runs_since(instance, since) if r[0] == "evaluate_retrieval"]
    during = sum(1 for r in runs if r[1] <= burst_ended)
    print(
        f"evaluations: {during} during the {burst_ended - since:.0f} s burst, "
        f"{len(runs) - during} after it (goal: 0 and 1)"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--via", choices=("inbox", "upload"), default="inbox")
    parser.add_argument("--api", default="http://127.0.0.1:8088")
    parser.add_argument("--home", type=Path, default=ROOT / ".groundwork")
    parser.add_argument("--blobs", choices=("fs", "s3"), default="fs")
    parser.add_argument(
        "--evaluations",
        action="store_true",
        help="after the rounds, wait out the evaluation debounce and count the tenant's "
        "evaluate_retrieval runs (goal: none during the burst, one after it)",
    )
    args = parser.parse_args()
    home = args.home.resolve()
    keys_file = home / "demo-keys.json"
    if not keys_file.exists():
        print("start the stack first: ./run demo")
        return 1
    key = json.loads(keys_file.read_text())["acme-staff"]
    os.environ.setdefault("DAGSTER_HOME", str(home / "dagster"))
    import dagster as dg

    instance = dg.DagsterInstance.get()
    latencies: list[float] = []
    parts: dict[str, list[float]] = {"wait": [], "start": [], "work": [], "rest": []}
    dropped: list[Path] = []
    uploaded: list[str] = []
    print(f"{'round':>5} {'total':>6} {'wait':>6} {'start':>6} {'work':>6} {'rest':>6}  runs")
    first_sha256 = ""
    bench_started = time.time()
    for round_ in range(args.rounds):
        marker = f"zq{uuid.uuid4().hex[:10]}"
        data = ten_page_pdf(marker)
        first_sha256 = first_sha256 or hashlib.sha256(data).hexdigest()
        wall_started = time.time()
        started = time.monotonic()
        if args.via == "inbox":
            dropped.append(_drop_in_inbox(home, marker, data))
        else:
            uploaded.append(_upload(args.api, key, f"fresh-{marker}.pdf", data))
        _search_until_found(args.api, key, marker, started)
        found_at = time.time()
        latencies.append(time.monotonic() - started)
        runs = [r for r in _runs_since(instance, wall_started - 1) if r[1] <= found_at]
        if runs:
            figures = _breakdown(runs, wall_started, found_at, latencies[-1])
            for name, value in zip(parts, figures, strict=True):
                parts[name].append(value)
            breakdown = " ".join(f"{value:6.1f}" for value in figures)
        else:
            breakdown = f"{'?':>6} {'?':>6} {'?':>6} {'?':>6}"
        names = ",".join(r[0] for r in runs)
        print(f"{round_:>5} {latencies[-1]:6.1f} {breakdown}  {names}", flush=True)
        # a random gap: drops must not phase-lock with the sensor daemon's 5 s loop
        time.sleep(random.uniform(1.0, 6.0))
    if args.evaluations:
        _count_evaluations(instance, bench_started, time.time())
    on_disk = (home / "blobs" / "sha256" / first_sha256[:2] / first_sha256).exists()
    _remove_bench_files(args.api, key, dropped, uploaded)
    if on_disk != (args.blobs == "fs"):
        print(f"the stack at {home} does not keep its blobs in {args.blobs}: figures discarded")
        return 1
    _print_summary(f"{args.via} ({args.blobs} blobs)", latencies, parts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
