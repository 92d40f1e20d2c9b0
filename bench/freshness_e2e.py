"""End-to-end freshness through the running stack: a file written to the inbox
-> sensor -> ingest run -> publication run -> found by /v1/search.

    ./run demo            # in another terminal (keeps the stack up)
    uv run python bench/freshness_e2e.py [--rounds 6]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--api", default="http://127.0.0.1:8088")
    args = parser.parse_args()
    keys_file = ROOT / ".groundwork" / "demo-keys.json"
    if not keys_file.exists():
        print("start the stack first: ./run demo")
        return 1
    key = json.loads(keys_file.read_text())["acme-staff"]
    latencies: list[float] = []
    for round_ in range(args.rounds):
        marker = f"zq{uuid.uuid4().hex[:10]}"
        started = time.monotonic()
        (ROOT / ".groundwork" / "inbox" / "acme" / f"fresh-{marker}.md").write_text(
            f"# Fresh\n\nThe freshness marker is {marker}.\n"
        )
        while time.monotonic() - started < 180:
            body = httpx.post(
                f"{args.api}/v1/search",
                json={"query": marker, "mode": "keyword"},
                headers={"Authorization": f"Bearer {key}"},
                timeout=10,
            ).json()
            if body.get("hits") and marker in body["hits"][0]["untrusted_text"]:
                break
            time.sleep(0.5)
        latencies.append(time.monotonic() - started)
        print(f"round {round_}: {latencies[-1]:.1f} s")
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))]
    print(
        f"upload -> searchable: p50 {statistics.median(latencies):.1f} s, p95 {p95:.1f} s ({len(latencies)} rounds)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
