"""The serving process's garbage collector.

Imports and startup leave ~240,000 container objects that live as long as the
process. Every full collection walked them all: bench/search_profile.py (8
clients) saw three in 27 s, each stopping every thread for ~124 ms, the
slowest requests' whole latency. Frozen (`gc.freeze`), they are never walked
again; collections see only what serving makes. Young collections ran every
700 allocations, ~770 times in the same run at ~0.27 ms each: at 10,000 they
run 15 times. Memory is not at stake: reference counting frees all but
cyclic garbage at once, and cycles wait a few thousand allocations longer.
"""

from __future__ import annotations

import gc

#: allocations (net of frees) between young collections; CPython's default is 700
YOUNG_THRESHOLD = 10_000


def tune_for_serving() -> None:
    """Called once the process has started: what exists now is frozen."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
