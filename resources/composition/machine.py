"""What this process may use of the machine it runs on."""

from __future__ import annotations

import os


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container's
    cpuset narrows), not the machine's count: a worker pool sized by
    `os.cpu_count()` oversubscribes a pinned process."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not every platform has affinity
        return max(1, os.cpu_count() or 1)
