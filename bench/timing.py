"""The latency figures the benches print: a nearest-rank percentile and the
median of a few timed runs (a shared machine is noisy: one run says little)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def percentile(values: list[float], q: float) -> float:
    """The value at rank round(q% of n - 1) of the sorted values."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def median_ms(run: Callable[[], object], repeats: int = 5) -> float:
    """Milliseconds of the median of `repeats` calls of `run`."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times)
