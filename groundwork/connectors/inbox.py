"""A tenant's inbox folder: the rules that make it a connector of its own.

Layout: `<inbox>/<tenant>/**`, mirrored by the tenant's `inbox` connector
instance — the fsspec connector on the local folder (resources.connectors.
inbox_folder), passed by the tenant's registration step. A `.subjects` file
(one subject per line) sets the scope for its folder and everything below
it, the nearest one winning; without any, files are readable by
`tenant:<tenant>` (every member). Hidden files and folders are skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from groundwork.connectors.port import RACY_MARK

SUBJECTS_FILE = ".subjects"
#: the tenant's inbox instance: its own kind (no connector sensor passes it,
#: no one adds one), its name reserved
INBOX_KIND = "inbox"
INBOX_NAME = "inbox"


def default_subjects(tenant_id: str) -> tuple[str, ...]:
    return (f"tenant:{tenant_id}",)


def inbox_tenants(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


#: the run label naming the inbox state a run was requested for (the sensor
#: adopts it rather than requesting the same work again)
FINGERPRINT_LABEL = "groundwork/inbox_fingerprint"


class Fingerprint:
    """The fingerprint of a listing, item by item: the inbox sensor's walk of a
    tenant folder (resources.connectors.inbox_folder.inbox_fingerprint) and
    the one a pass records of the listing it handled, so the two compare
    equal when nothing changed."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()

    def add(self, item_id: str, version: str, subjects: tuple[str, ...]) -> None:
        settled = version.split(RACY_MARK, 1)[0]  # a racy file's next listing differs anyway
        self._digest.update(f"{item_id}\0{settled}\0{','.join(subjects)}\n".encode())

    @property
    def value(self) -> str:
        return self._digest.hexdigest()[:16]


#: While a watcher requests runs as files arrive, the inbox sensor walks the
#: folders only this often: the fallback for an event the watcher missed (a
#: network mount without notifications, a request Dagster refused).
INBOX_FALLBACK_SECONDS = 60.0
WATCHER_MARKER = "inbox-watcher.json"


def mark_watched(home: Path, inbox: Path, pid: int) -> None:
    """A watcher of `inbox` runs in process `pid` (written when it starts)."""
    marker = home / WATCHER_MARKER
    partial = marker.with_suffix(".partial")
    partial.write_text(json.dumps({"pid": pid, "inbox": str(inbox.resolve())}))
    partial.replace(marker)


def unmark_watched(home: Path) -> None:
    (home / WATCHER_MARKER).unlink(missing_ok=True)


def watched(home: Path, inbox: Path) -> bool:
    """Whether a live watcher of this very inbox says it runs: a marker left
    by a killed supervisor, or one for another inbox, counts for nothing."""
    try:
        mark = json.loads((home / WATCHER_MARKER).read_text())
        pid, watched_inbox = int(mark["pid"]), str(mark["inbox"])
        os.kill(pid, 0)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return watched_inbox == str(inbox.resolve())
