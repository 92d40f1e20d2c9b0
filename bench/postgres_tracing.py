"""What tracing PostgreSQL statements costs a request that is not sampled.

    uv run python bench/postgres_tracing.py [--rounds 15]

With GROUNDWORK_TRACE_SAMPLE_RATIO 0.1 nine requests in ten are not recorded,
yet each of their statements still goes through the tracer. This bench
measures, in one process on the home's PostgreSQL (GROUNDWORK_HOME; started
if it is not running), the CPU of a pool checkout with the two statements a
walled read runs (a set_config, then a small select), inside an unsampled
span, through three pools made alike: plain psycopg, OpenTelemetry's psycopg
instrumentation (proxies around every connection and cursor), and this
project's cursor (resources/composition/tracing.py `trace_postgres`). The
pools are measured interleaved, `--rounds` blocks of 200 checkouts each, so a
shared machine's drifting load hits all three alike; medians are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from psycopg_pool import ConnectionPool

from resources.composition.platform import ensure_engines
from resources.composition.settings import GroundworkSettings
from resources.composition.tracing import trace_postgres

CHECKOUTS = 200


def checkout_us(pool: ConnectionPool[Any], n: int) -> float:
    """CPU microseconds of this thread per checkout with its two statements."""
    started = time.thread_time()
    for _ in range(n):
        with pool.connection() as conn:
            conn.execute("SELECT set_config('groundwork.bench', 'x', true)").fetchone()
            conn.execute("SELECT generate_series(1, 10)").fetchall()
    return (time.thread_time() - started) / n * 1e6


def make_pools(url: str, provider: TracerProvider) -> dict[str, ConnectionPool[Any]]:
    """The three pools; each tracer is installed only while its pool connects."""

    def opened() -> ConnectionPool[Any]:
        pool: ConnectionPool[Any] = ConnectionPool(url, min_size=1, max_size=1, open=True)
        pool.wait()
        return pool

    pools = {"plain psycopg": opened()}
    PsycopgInstrumentor().instrument(tracer_provider=provider)
    pools["OpenTelemetry psycopg instrumentation"] = opened()
    PsycopgInstrumentor().uninstrument()
    trace_postgres(provider)
    pools["traced cursor (trace_postgres)"] = opened()
    return pools


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    settings = GroundworkSettings.from_env()
    url = ensure_engines(settings).server_url
    provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(0.0)))  # nothing sampled
    trace.set_tracer_provider(provider)
    pools = make_pools(url, provider)
    figures: dict[str, list[float]] = {name: [] for name in pools}
    with trace.get_tracer("bench").start_as_current_span("unsampled request"):
        for pool in pools.values():
            checkout_us(pool, 50)  # warm-up
        for _ in range(args.rounds):
            for name, pool in pools.items():
                figures[name].append(checkout_us(pool, CHECKOUTS))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"CPU per pool checkout + 2 statements, unsampled, median of {args.rounds} x "
        f"{CHECKOUTS} (load average {load}):"
    )
    plain = statistics.median(figures["plain psycopg"])
    for name, values in figures.items():
        median = statistics.median(values)
        print(f"  {name}: {median:.0f} us ({median - plain:+.0f} us)")
    for pool in pools.values():
        pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
