"""wrk, the load tool the search benches drive the API with: its Lua script
(queries cycled from a file, 503s counted apart from errors) and one run.
Requires the Debian package `wrk`."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

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


@contextmanager
def wrk_files(queries: Sequence[str]) -> Iterator[tuple[Path, Path]]:
    """The Lua script and a queries file (one JSON string a line), removed after."""
    queries_file = Path(tempfile.mkstemp(suffix=".txt")[1])
    queries_file.write_text("\n".join(json.dumps(t) for t in queries) + "\n")
    script = Path(tempfile.mkstemp(suffix=".lua")[1])
    script.write_text(LUA)
    try:
        yield script, queries_file
    finally:
        queries_file.unlink(missing_ok=True)
        script.unlink(missing_ok=True)


def run_wrk(
    base: str, connections: int, seconds: int, script: Path, queries_file: Path, key: str
) -> dict[str, float]:
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [
            "wrk",
            f"-t{min(connections, 2)}",
            f"-c{connections}",
            f"-d{seconds}s",
            "--timeout",
            "10s",
            "-s",
            str(script),
            f"{base}/v1/search",
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, GW_KEY=key, GW_QUERIES=str(queries_file)),
        timeout=seconds + 60,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["wrk_cpu_s"] = (children_after.ru_utime - children_before.ru_utime) + (
        children_after.ru_stime - children_before.ru_stime
    )
    return result
