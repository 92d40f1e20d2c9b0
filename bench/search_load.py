"""/v1/search under load with wrk (a real load tool), loopback only, bounded.

    uv run python bench/search_load.py [--beir ../shared/data/scifact] [--seconds 20]

Serves the API (one uvicorn process) over a BEIR corpus already ingested by
`bench/ingest_and_search.py --beir ...` (database groundwork_bench) or, if
none is there, over a synthetic corpus it ingests first; then runs wrk at 1
and 8 concurrent connections and prints p50/p95/p99 and errors. Requires the
Debian package `wrk`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from bench.api_server import serve_api  # noqa: E402
from evals.beir import load_queries  # noqa: E402
from resources.platform import connect, ensure_engines  # noqa: E402
from resources.settings import GroundworkSettings  # noqa: E402

DATABASE = "groundwork_bench"
PREFIX = "gwbench"

LUA = r"""
-- GW_QUERIES: a query (a JSON string) a line, sent with the key GW_KEY; or
-- "<API key>\t<query>" a line, so clients cycle through several tenants' keys
local queries = {}
local keys = {}
local index = 0
local token = os.getenv("GW_KEY")
local threads = {}
setup = function(thread)
  table.insert(threads, thread)
end
overloaded = 0
response = function(status, headers, body)
  if status == 503 then overloaded = overloaded + 1 end
end
init = function(args)
  for line in io.lines(os.getenv("GW_QUERIES")) do
    local tab = line:find("\t", 1, true)
    keys[#keys + 1] = tab and line:sub(1, tab - 1) or token
    queries[#queries + 1] = tab and line:sub(tab + 1) or line
  end
end
request = function()
  index = (index % #queries) + 1
  local body = '{"query": ' .. queries[index] .. ', "limit": 10}'
  return wrk.format("POST", "/v1/search", {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. keys[index]}, body)
end
done = function(summary, latency, requests)
  local refused = 0
  for _, thread in ipairs(threads) do refused = refused + thread:get("overloaded") end
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout - refused
  io.write(string.format('{"requests": %d, "errors": %d, "refused_503": %d, "p50_ms": %.1f, "p95_ms": %.1f, "p99_ms": %.1f, "rps": %.1f}\n',
    summary.requests, errors, refused, latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000, summary.requests / (summary.duration / 1e6)))
end
"""


def api_rss_mib(pid: int) -> float:
    """Resident memory of the API: the server process and its workers."""
    import psutil

    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / 2**20


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--beir", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/scifact"
    )
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--port", type=int, default=8098)
    parser.add_argument("--workers", type=int, default=1, help="API worker processes")
    parser.add_argument(
        "--levels", default="1,8,50", help="concurrent connections, comma-separated"
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed (Debian: apt-get install wrk)")
        return 1
    settings = GroundworkSettings.from_env()
    endpoints = ensure_engines(settings)
    platform = connect(settings, endpoints, database=DATABASE, index_prefix=PREFIX)
    tenants = sorted(
        platform.catalog.list_tenants(), key=lambda t: -platform.catalog.counts(t.tenant_id).chunks
    )
    if not tenants:
        print("no benchmark corpus: run bench/ingest_and_search.py first")
        return 1
    tenant = tenants[0].tenant_id
    chunks = platform.catalog.counts(tenant).chunks
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "load")
    if args.beir.exists():
        texts = list(load_queries(args.beir).values())
    else:
        texts = [f"storage quota policy for team {i}" for i in range(200)]
    random.Random(5).shuffle(texts)
    queries_file = Path(tempfile.mkstemp(suffix=".txt")[1])
    queries_file.write_text("\n".join(json.dumps(t) for t in texts[:1000]) + "\n")
    script = Path(tempfile.mkstemp(suffix=".lua")[1])
    script.write_text(LUA)
    stack = contextlib.ExitStack()
    try:
        pids: list[int] = []
        base = stack.enter_context(
            serve_api(args.port, DATABASE, PREFIX, on_start=pids.append, workers=args.workers)
        )
        for text in texts[:20]:  # warm-up: model sessions, pools, caches
            httpx.post(
                f"{base}/v1/search",
                json={"query": text},
                headers={"Authorization": f"Bearer {key}"},
                timeout=30,
            )
        print(
            f"/v1/search on tenant {tenant} ({chunks} chunks), {args.workers} API worker(s), "
            f"wrk {args.seconds} s per level, loopback; API RSS {api_rss_mib(pids[0]):.0f} MiB"
        )
        for connections in (int(c) for c in args.levels.split(",")):
            threads = min(connections, 2)
            out = subprocess.run(
                [
                    "wrk",
                    f"-t{threads}",
                    f"-c{connections}",
                    f"-d{args.seconds}s",
                    "--timeout",
                    "10s",
                    "-s",
                    str(script),
                    f"{base}/v1/search",
                ],
                capture_output=True,
                text=True,
                env=dict(os.environ, GW_KEY=key, GW_QUERIES=str(queries_file)),
                timeout=args.seconds + 60,
                check=True,
            )
            result = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"  {connections} client(s): p50 {result['p50_ms']:.1f} ms  p95 {result['p95_ms']:.1f} ms  "
                f"p99 {result['p99_ms']:.1f} ms  {result['rps']:.1f} req/s  errors {result['errors']} "
                f"of {result['requests']}  (503 {result['refused_503']})  "
                f"API RSS {api_rss_mib(pids[0]):.0f} MiB"
            )
    finally:
        stack.close()
        platform.close()
        queries_file.unlink(missing_ok=True)
        script.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
