"""Who stops a home's shared engines: the last session out.

Two pytest sessions on one checkout (or a test session and
bench/scale_out.py) share `.groundwork-test`: the engines the first starts,
the second reuses. Each stopped them at its end, so the session that ended
first stopped the OpenSearch node under the other, whose next search met a
502. Each session now holds a shared lock on the home's lease file for its
lifetime and stops the engines only when it can take that lock exclusively,
that is when no other session holds it; the exclusive lock is held until
the engines are down, so a session starting meanwhile waits and then starts
them again.
"""

from __future__ import annotations

import fcntl
from pathlib import Path

LEASE_FILE = "engines.lease"


class EngineLease:
    def __init__(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self._file = (home / LEASE_FILE).open("a+")
        fcntl.flock(self._file, fcntl.LOCK_SH)  # waits while a last session stops the engines
        self._last = False

    def last_out(self) -> bool:
        """Whether no other session holds the lease (then this one now holds it
        alone until `release`). The shared lock may be given up to ask: only at
        a session's end."""
        if not self._last:
            try:
                fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            self._last = True
        return True

    def release(self) -> None:
        self._file.close()
