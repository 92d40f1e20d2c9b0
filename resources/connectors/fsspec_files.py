"""The fsspec connector: one implementation for every filesystem fsspec
reaches (a local directory, SFTP, WebDAV, SMB ...), given its protocol and
options.

Versions come from the listing alone — the entry's ETag when the filesystem
has one, else size and modification time — so an unchanged folder is listed,
never read. Listing is complete (a file not listed is gone) and paged in path
order (code point order, which is UTF-8 byte order: a sorted listing, each
page naming the path range it covers); the cursor is the last path of a page,
so a pass resumes after it.

The sync fetches a page's items from several threads at once. A local
filesystem takes that; a remote one may not: fsspec's SFTP is one paramiko
session, whose requests from two threads at once wait on each other's
answers for ever (seen: the first page of two files hung its pass). So a
filesystem not known to be thread-safe is used by one thread at a time, and
a fetched file is read whole (into a spooled temporary file: memory up to
SPOOL_IN_MEMORY, disk beyond) before the next thread's call.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO, cast

import fsspec

from groundwork.connectors.port import ConnectorError, FetchResult, ListingPage, SourceItem
from groundwork.connectors.selection import ItemSelection, SubjectsByPrefix

PAGE_SIZE = 1000
#: protocols whose filesystem object several threads may use at once
THREAD_SAFE_PROTOCOLS = frozenset({"file", "local"})
#: an mtime this recent is not trusted to tell an edit (entry_version)
RACY_WINDOW_SECONDS = 3.0
#: a fetched file read under the lock stays in memory up to this size
SPOOL_IN_MEMORY = 8 * 1024 * 1024


def entry_version(info: Mapping[str, Any], now: float | None = None) -> str:
    """What changes when the bytes change, as far as a listing can tell: an
    ETag is the filesystem's own content token; size and mtime (with the inode
    where there is one: a replacement renamed over a file has a new inode)
    otherwise.

    A coarse mtime (whole seconds: SFTP's, an ext3 or FAT disk's) within
    RACY_WINDOW_SECONDS of `now` (this host's clock when the entry was
    listed) is not trusted (git's "racy" rule, as the inbox's): a same-size
    edit just after a read may keep it. Such an entry's version names the
    moment it was listed, so every pass reads it until its mtime is old
    enough, and one more read confirms the bytes under the settled version
    (unchanged bytes make no new version). A server clock behind this host's
    makes the window smaller; one ahead makes it larger, never unsafe. A
    nanosecond mtime (a local disk's) tells two writes apart by itself."""
    etag = info.get("ETag") or info.get("etag")
    if etag:
        return f"etag:{str(etag).strip(chr(34))}"
    mtime = info.get("mtime") or info.get("modified") or info.get("LastModified") or ""
    if hasattr(mtime, "timestamp"):
        mtime = mtime.timestamp()
    inode = info.get("ino")
    version = f"{info.get('size')}:{mtime}" + (f":{inode}" if inode else "")
    if (
        isinstance(mtime, int | float)
        and float(mtime).is_integer()
        and now is not None
        and mtime > now - RACY_WINDOW_SECONDS
    ):
        version += f":racy@{now:.6f}"
    return version


class FsspecConnector:
    kind = "fsspec"
    complete_listing = True
    sorted_listing = True  # paths sorted here, in code point order
    lasting_locations = False  # a moved file's old path holds nothing

    def __init__(
        self,
        protocol: str,
        root: str,
        *,
        options: Mapping[str, Any] | None = None,
        selection: ItemSelection | None = None,
        subjects: SubjectsByPrefix | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        try:
            self.fs = fsspec.filesystem(protocol, **dict(options or {}))
        except (ImportError, ValueError, OSError, TypeError) as exc:
            # TypeError: an option the filesystem does not take (a misspelt key)
            raise ConnectorError(self.kind, None, f"cannot open {protocol}: {exc}") from exc
        self.root = root.rstrip("/")
        self._serial = protocol not in THREAD_SAFE_PROTOCOLS
        self._lock: contextlib.AbstractContextManager[Any] = (
            threading.Lock() if self._serial else contextlib.nullcontext()
        )
        self.selection = selection or ItemSelection()
        self.subjects = subjects or SubjectsByPrefix()
        self.page_size = page_size

    def _relative(self, name: str) -> str:
        stripped = self.fs._strip_protocol(name)
        root = self.fs._strip_protocol(self.root)
        return stripped[len(root) :].lstrip("/")

    def list_pages(self, cursor: str | None) -> Iterator[ListingPage]:
        # before the walk: an entry is racy against the earliest moment it could
        # have been looked at
        listed = time.time()
        try:
            with self._lock:
                if not self.fs.isdir(self.root):
                    raise ConnectorError(self.kind, None, f"{self.root} is not a folder")
                found = self.fs.find(self.root, detail=True)
        except ConnectorError:
            raise
        except (OSError, ValueError) as exc:
            raise ConnectorError(self.kind, None, str(exc), retryable=True) from exc
        entries = sorted(
            (rel, info)
            for name, info in found.items()
            if info.get("type") == "file"
            and self.selection.selects(rel := self._relative(name))
            and (cursor is None or rel > cursor)
        )
        after = cursor
        for start in range(0, len(entries), self.page_size):
            page = entries[start : start + self.page_size]
            last = start + self.page_size >= len(entries)
            yield ListingPage(
                [
                    SourceItem(
                        item_id=rel,
                        version=entry_version(info, listed),
                        size=info.get("size"),
                        media_type=None,
                        subjects=self.subjects.subjects_for(rel),
                        location={"path": rel},
                    )
                    for rel, info in page
                ],
                (),
                page[-1][0],
                span=(after, None if last else page[-1][0]),
            )
            after = page[-1][0]
        if not entries:  # an empty folder: the one page covers everything
            yield ListingPage([], (), cursor, span=(cursor, None))

    def fetch(self, item: SourceItem, known_version: str | None) -> FetchResult:
        path = f"{self.root}/{item.item_id}"
        try:
            with self._lock:
                version = entry_version(self.fs.info(path), time.time())
                if known_version is not None and version == known_version:
                    return FetchResult(None, version, None)
                if not self._serial:
                    return FetchResult(self.fs.open(path, "rb"), version, None)
                return FetchResult(self._read_whole(path), version, None)
        except FileNotFoundError as exc:
            raise ConnectorError(self.kind, item.item_id, "not found") from exc
        except PermissionError as exc:
            raise ConnectorError(self.kind, item.item_id, f"permission denied: {exc}") from exc
        except OSError as exc:
            raise ConnectorError(self.kind, item.item_id, str(exc), retryable=True) from exc

    def _read_whole(self, path: str) -> BinaryIO:
        """The file's bytes, read now (under the lock), as a stream the sync spools."""
        # returned open: the sync reads and closes it
        copy = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
        try:
            with self.fs.open(path, "rb") as source:
                shutil.copyfileobj(source, copy, 1024 * 1024)
        except BaseException:
            copy.close()
            raise
        copy.seek(0)
        return cast(BinaryIO, copy)
