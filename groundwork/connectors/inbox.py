"""A tenant's inbox folder: which files to register, with which permission scope.

Layout: `<inbox>/<tenant>/**`. A `.subjects` file (one subject per line) sets
the scope for its folder and everything below it, the nearest one winning;
without any, files are readable by `tenant:<tenant>` (every member).
Hidden files and folders are skipped; bounds keep one scan finite.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SUBJECTS_FILE = ".subjects"
MAX_FILES_PER_SCAN = 10_000
MAX_FILE_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class InboxFile:
    path: Path
    relative: str  # POSIX path under the tenant folder: the source's origin
    size: int
    mtime_ns: int
    subjects: tuple[str, ...]
    inode: int = 0

    @property
    def stat_signature(self) -> str:
        """What a rescan compares before reading the file: an edit that keeps
        the size and the mtime (a tool that restores mtime) escapes it, and a
        replacement renamed over the file changes the inode; see folder_sync."""
        return f"{self.size}:{self.mtime_ns}:{self.inode}"


def default_subjects(tenant_id: str) -> tuple[str, ...]:
    return (f"tenant:{tenant_id}",)


def _read_subjects(folder: Path) -> tuple[str, ...] | None:
    marker = folder / SUBJECTS_FILE
    if not marker.is_file():
        return None
    lines = [line.strip() for line in marker.read_text(errors="replace").splitlines()]
    subjects = tuple(sorted({line for line in lines if line and not line.startswith("#")}))
    return subjects or None


def scan_tenant_inbox(root: Path, tenant_id: str) -> Iterator[InboxFile]:
    folder = root / tenant_id
    if not folder.is_dir():
        return
    inherited: dict[Path, tuple[str, ...]] = {}
    count = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        current = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        parent_scope = inherited.get(current.parent, default_subjects(tenant_id))
        scope = _read_subjects(current) or parent_scope
        inherited[current] = scope
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = current / name
            try:
                stat = path.stat()
            except OSError:
                continue
            count += 1
            if count > MAX_FILES_PER_SCAN:
                return
            yield InboxFile(
                path=path,
                relative=path.relative_to(folder).as_posix(),
                size=stat.st_size,
                mtime_ns=stat.st_mtime_ns,
                subjects=scope,
                inode=stat.st_ino,
            )


def inbox_tenants(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


#: the run label naming the inbox state a run was requested for (the sensor
#: adopts it rather than requesting the same work again)
FINGERPRINT_LABEL = "groundwork/inbox_fingerprint"


def inbox_fingerprint(root: Path, tenant_id: str) -> str:
    """Changes whenever a file is added, removed, touched or re-scoped."""
    walk = Fingerprint()
    for item in scan_tenant_inbox(root, tenant_id):
        walk.add(item)
    return walk.value


class Fingerprint:
    """The fingerprint of a folder's walk, file by file: the inbox sensor's
    (`inbox_fingerprint`), and the one a registration records of the walk it
    registered, so the two compare equal when nothing changed."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()

    def add(self, item: InboxFile) -> None:
        self._digest.update(
            f"{item.relative}\0{item.size}\0{item.mtime_ns}\0{','.join(item.subjects)}\n".encode()
        )

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
