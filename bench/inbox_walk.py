"""The inbox sensor's walk: every tenant folder's fingerprint, as one tick
computes it under the supervisor's watcher (once a minute, pipelines/sensors.py).

    uv run python bench/inbox_walk.py [--inbox <home>/inbox] [--rounds 7]
    PYTHONPATH=<other checkout> uv run python bench/inbox_walk.py   # the same walk at another commit

Prints the files and folders walked and this process's CPU seconds per walk
(median of the rounds, after one warm-up walk). The cost grows with the files
in the inbox, not with what changed, so a large tenant's folder is the case
to run it on (e.g. a home prepared by `bench/idle.py --prepare`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from resources.composition.settings import GroundworkSettings
from resources.connectors.inbox_folder import inbox_fingerprint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inbox", type=Path, default=None, help="default: the home's inbox")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    inbox: Path = args.inbox or GroundworkSettings.from_env().inbox_dir
    tenants = sorted(p.name for p in inbox.iterdir() if p.is_dir() and not p.name.startswith("."))
    files = sum(len(names) for folder in tenants for _, _, names in os.walk(inbox / folder))
    for tenant in tenants:  # warm-up: the directory entries in the page cache
        inbox_fingerprint(inbox, tenant)
    seconds = []
    for _ in range(args.rounds):
        start = time.process_time()
        for tenant in tenants:
            inbox_fingerprint(inbox, tenant)
        seconds.append(time.process_time() - start)
    print(
        f"inbox walk of {inbox}: {len(tenants)} folders, {files} files; "
        f"{statistics.median(seconds):.3f} CPU-s per walk (median of {args.rounds}, "
        f"range {min(seconds):.3f}-{max(seconds):.3f})"
    )


if __name__ == "__main__":
    main()
