"""Chaos against a running stack (issue 18's goals), one run, a table printed.

    uv run groundwork up              # in another terminal (or ./run demo)
    uv run python bench/chaos.py [--load-seconds 60] [--clients 50] [--skip-kills]

1. Hostile set: bombs, mismatched types, immense tokens, NUL/surrogate strings
   through the HTTP API; counts 5xx, then waits for every accepted file's
   outcome (from the closed set) and checks a normal file of the same tenant
   is published (no tenant blocked).
2. Load: `--clients` threads searching on one key for `--load-seconds` while
   the tenant ingests; every error counted (a 503 with Retry-After counts apart).
3. kill -9 of each child in turn (API, MCP, Dagster, PostgreSQL, OpenSearch)
   during ingest + search: seconds until /v1/health is ok and a search answers;
   afterwards, no Dagster run left unfinished with a dead worker, and every
   file uploaded before the kills is published.

Only loopback addresses are used; every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]

from resources.composition.settings import GroundworkSettings  # noqa: E402

FINAL_STATES = {"extracted", "failed"}


def _key(settings: GroundworkSettings) -> tuple[str, str]:
    """A fresh tenant and key made through the CLI (as an operator would)."""
    tenant = f"chaos-{uuid.uuid4().hex[:6]}"
    groundwork = str(Path(sys.executable).parent / "groundwork")
    subprocess.run([groundwork, "tenant", "create", tenant], check=True, capture_output=True)
    made = subprocess.run(
        [groundwork, "key", "create", tenant, "--subject", f"tenant:{tenant}"],
        check=True,
        capture_output=True,
        text=True,
    )
    return tenant, made.stdout.strip().splitlines()[-1]


def _flate_bomb(inflated: int = 2 * 1024**3) -> bytes:
    """A one-page PDF whose content stream inflates to `inflated` bytes of spaces."""
    compressor = zlib.compressobj(9)
    block = b" " * (16 * 1024 * 1024)
    parts = [compressor.compress(block) for _ in range(inflated // len(block))]
    stream = b"".join(parts) + compressor.flush()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def hostile(api: str, key: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    files: dict[str, bytes] = {
        "normal.md": b"# Boiler\n\nThe boiler relief valve is tested every March.\n",
        "token-40k.txt": b"x" * 40_000,
        "zip-as.pdf": gzip.compress(b"not a pdf") + b"PK\x03\x04" + os.urandom(200),
        "random.pdf": os.urandom(4096),
        "empty.pdf": b"",
        "zip-as.docx": b"PK\x03\x04" + os.urandom(512),
        "bomb.pdf": _flate_bomb(),
    }
    statuses: Counter[str] = Counter()
    accepted: dict[str, str] = {}
    with httpx.Client(base_url=api, headers=headers, timeout=120) as client:
        for name, data in files.items():
            response = client.post("/v1/sources", params={"filename": name}, content=data)
            statuses[str(response.status_code)] += 1
            if response.status_code == 201:
                accepted[name] = response.json()["source_id"]
        # a 20 MB single token through a resumable upload session
        big = b"y" * (20 * 1024 * 1024)
        made = client.post("/v1/uploads", json={"filename": "token-20mb.txt", "size": len(big)})
        statuses[str(made.status_code)] += 1
        if made.status_code == 201:
            upload = made.json()["upload_id"]
            client.put(f"/v1/uploads/{upload}", params={"offset": 0}, content=big)
            done = client.post(f"/v1/uploads/{upload}/complete")
            statuses[str(done.status_code)] += 1
            if done.status_code == 200:
                accepted["token-20mb.txt"] = done.json()["source_id"]
        hostile_strings = ["a\u0000b", "\ud800", "文件", "\u202e", "a\r\nb"]
        for value in hostile_strings:
            raw = json.dumps({"query": value, "filters": {"tags": [value]}})
            for url, method in (("/v1/search", "POST"), ("/v1/tools/read_file", "POST")):
                response = client.request(
                    method,
                    url,
                    content=raw.encode("utf-8", "surrogatepass"),
                    headers={"content-type": "application/json"},
                )
                statuses[str(response.status_code)] += 1
            response = client.get(
                f"/v1/sources/{value.encode('utf-8', 'surrogatepass').hex()}/status"
            )
            statuses[str(response.status_code)] += 1
        outcomes: dict[str, str] = {}
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and len(outcomes) < len(accepted):
            for name, source_id in accepted.items():
                if name in outcomes:
                    continue
                status = client.get(f"/v1/sources/{source_id}/status")
                if status.status_code != 200:
                    continue
                body = status.json()
                if body["processing_state"] == "failed":
                    outcomes[name] = f"failed: {body['failure_reason']}"
                elif body["published"]:
                    outcomes[name] = "published"
            time.sleep(2)
        found = client.post("/v1/search", json={"query": "boiler relief valve", "mode": "keyword"})
        normal_searchable = found.status_code == 200 and any(
            h["source_id"] == accepted.get("normal.md") for h in found.json()["hits"]
        )
    return {
        "statuses": dict(statuses),
        "server_errors": sum(n for s, n in statuses.items() if s.startswith("5")),
        "outcomes": outcomes,
        "unfinished": sorted(set(accepted) - set(outcomes)),
        "normal_file_searchable": normal_searchable,
    }


def load(api: str, key: str, clients: int, seconds: float, ingest: bool) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    errors: Counter[str] = Counter()
    done = Counter[str]()
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker(n: int) -> None:
        with httpx.Client(base_url=api, headers=headers, timeout=30) as client:
            i = 0
            while time.monotonic() < stop and i < 100_000:
                i += 1
                try:
                    response = client.post(
                        "/v1/search", json={"query": f"valve test schedule {n % 7}"}
                    )
                    kind = str(response.status_code)
                    if response.status_code == 503 and "retry-after" in response.headers:
                        kind = "503-retry-after"
                except httpx.HTTPError as exc:
                    kind = type(exc).__name__
                with lock:
                    if kind == "200":
                        done["ok"] += 1
                    else:
                        errors[kind] += 1

    if ingest:
        with httpx.Client(base_url=api, headers=headers, timeout=60) as client:
            for n in range(30):
                client.post(
                    "/v1/sources",
                    params={"filename": f"load-{uuid.uuid4().hex[:6]}.md"},
                    content=f"# Valve {n}\n\nValve {n} is tested on schedule {n % 7}.\n".encode(),
                )
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 60)
    return {"ok": done["ok"], "errors": dict(errors)}


CHILDREN = {
    "api": "retrieval_api.main:app",
    "mcp": "mcp --http",
    "dagster": "dagster dev",
    "postgres": "pgdata",
    "opensearch": "opensearch",
}


def _pids(pattern: str, home: Path) -> list[int]:
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    pids = []
    for pid in map(int, found.split()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if pid != os.getpid() and ("pgdata" not in pattern or str(home) in cmdline):
            pids.append(pid)
    return pids


def _serving(api: str, key: str) -> bool:
    try:
        health = httpx.get(f"{api}/v1/health", timeout=3)
        found = httpx.post(
            f"{api}/v1/search",
            json={"query": "boiler relief valve", "mode": "keyword"},
            headers={"Authorization": f"Bearer {key}"},
            timeout=5,
        )
    except httpx.HTTPError:
        return False
    return health.status_code == 200 and found.status_code == 200


def kills(api: str, key: str, home: Path) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    uploaded: list[str] = []
    headers = {"Authorization": f"Bearer {key}"}
    for name, pattern in CHILDREN.items():
        # something to ingest while the child dies
        with httpx.Client(base_url=api, headers=headers, timeout=30) as client:
            for _ in range(3):
                try:
                    made = client.post(
                        "/v1/sources",
                        params={"filename": f"kill-{name}-{uuid.uuid4().hex[:6]}.md"},
                        content=f"# Before {name}\n\nUploaded before killing {name}.\n".encode(),
                    )
                    if made.status_code == 201:
                        uploaded.append(made.json()["source_id"])
                except httpx.HTTPError:
                    pass
        pids = _pids(pattern, home)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        recovered = None
        time.sleep(1)
        while time.monotonic() - killed_at < 180:
            if _serving(api, key):
                recovered = time.monotonic() - killed_at
                break
            time.sleep(0.5)
        rows[name] = {"killed": len(pids), "serving_again_s": recovered}
    published: dict[str, bool] = {}
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        published = {}
        for source_id in uploaded:
            try:
                status = httpx.get(
                    f"{api}/v1/sources/{source_id}/status", headers=headers, timeout=10
                )
                published[source_id] = status.status_code == 200 and status.json()["published"]
            except httpx.HTTPError:
                published[source_id] = False
        if all(published.values()):
            break
        time.sleep(3)
    rows["uploaded_before_kills"] = len(uploaded)
    rows["published_after"] = sum(published.values())
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--api", default="http://127.0.0.1:8088")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--load-seconds", type=float, default=60)
    parser.add_argument("--skip-kills", action="store_true")
    args = parser.parse_args()
    settings = GroundworkSettings.from_env()
    if not _serving_health(args.api):
        print("start the stack first: uv run groundwork up (or ./run demo)")
        return 1
    tenant, key = _key(settings)
    started = time.monotonic()
    report: dict[str, Any] = {"tenant": tenant}
    report["hostile"] = hostile(args.api, key)
    report["load"] = load(args.api, key, args.clients, args.load_seconds, ingest=True)
    if not args.skip_kills:
        report["kills"] = kills(args.api, key, settings.home)
    report["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(report, indent=1, ensure_ascii=False))
    hostile_ok = (
        report["hostile"]["server_errors"] == 0 and report["hostile"]["normal_file_searchable"]
    )
    print(
        "\n| goal | result |\n|---|---|\n"
        f"| hostile set: 5xx | {report['hostile']['server_errors']} |\n"
        f"| hostile set: outcomes | {report['hostile']['outcomes']} |\n"
        f"| hostile set: tenant not blocked | {report['hostile']['normal_file_searchable']} |\n"
        f"| load {args.clients} clients x {args.load_seconds:.0f} s: ok / errors | "
        f"{report['load']['ok']} / {report['load']['errors']} |"
    )
    for name, row in report.get("kills", {}).items():
        if isinstance(row, dict):
            print(f"| kill -9 {name}: serving again after | {row['serving_again_s']} s |")
    if "kills" in report:
        print(
            f"| files uploaded before the kills, published after | "
            f"{report['kills']['published_after']} / {report['kills']['uploaded_before_kills']} |"
        )
    return 0 if hostile_ok else 1


def _serving_health(api: str) -> bool:
    try:
        return httpx.get(f"{api}/v1/health", timeout=3).status_code == 200
    except httpx.HTTPError:
        return False


if __name__ == "__main__":
    sys.exit(main())
