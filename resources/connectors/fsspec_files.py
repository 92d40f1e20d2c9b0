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

Permissions can live in the folder itself (`subjects_file`, the inbox's
`.subjects`): a marker file (one subject per line, `#` comments) sets the
subjects of its folder and everything below it, the nearest one winning, as
a `subjects_by_prefix` entry would; the markers are read with the listing
(they are hidden, so never items), so editing one re-scopes the files below
it on the next pass.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO, cast

import fsspec
from fsspec.implementations.local import LocalFileSystem

from groundwork.connectors.port import (
    RACY_MARK,
    ConnectorError,
    FetchResult,
    ListingPage,
    SourceItem,
)
from groundwork.connectors.selection import ItemSelection, SubjectsByPrefix

PAGE_SIZE = 1000
#: protocols whose filesystem object several threads may use at once
THREAD_SAFE_PROTOCOLS = frozenset({"file", "local"})
#: an mtime this recent is not trusted to tell an edit (entry_version)
RACY_WINDOW_SECONDS = 3.0
#: a fetched file read under the lock stays in memory up to this size
SPOOL_IN_MEMORY = 8 * 1024 * 1024
#: a subjects marker larger than this is not a list of subjects: ignored
MAX_MARKER_BYTES = 64 * 1024


def entry_version(info: Mapping[str, Any], now: float | None = None) -> str:
    """What changes when the bytes change, as far as a listing can tell: an
    ETag is the filesystem's own token; size and mtime (with the inode where
    there is one: a replacement renamed over a file has a new inode)
    otherwise. The racy rule below holds for both: a server may build its
    ETag from the same coarse mtime.

    An mtime within RACY_WINDOW_SECONDS of `now` (this host's clock when the
    entry was listed) is not trusted (git's "racy" rule): timestamps are
    coarse — whole seconds over SFTP or on a FAT disk, a clock tick (a few
    ms) on a local ext4 disk, however many digits it shows — so a same-size
    edit just after a read may keep it. Such an entry's version names the
    moment it was listed (RACY_MARK), so the next pass reads it again, until
    its mtime is old enough and one more read confirms the bytes under the
    settled version (unchanged bytes make no new version). A server clock
    behind this host's makes the window smaller; one ahead makes it larger,
    never unsafe."""
    mtime = info.get("mtime") or info.get("modified") or info.get("LastModified") or ""
    if hasattr(mtime, "timestamp"):
        mtime = mtime.timestamp()
    etag = info.get("ETag") or info.get("etag")
    if etag:
        version = f"etag:{str(etag).strip(chr(34))}"
    else:
        inode = info.get("ino")
        version = f"{info.get('size')}:{mtime}" + (f":{inode}" if inode else "")
    # an ETag is no better than the mtime it may be made of (WsgiDAV's is
    # inode, whole-second mtime and size): a recent entry is racy either way
    if isinstance(mtime, int | float) and now is not None and mtime > now - RACY_WINDOW_SECONDS:
        version += f"{RACY_MARK}{now:.6f}"
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
        subjects_file: str | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        try:
            self.fs = fsspec.filesystem(protocol, **dict(options or {}))
        except (ImportError, ValueError, OSError, TypeError) as exc:
            # TypeError: an option the filesystem does not take (a misspelt key)
            raise ConnectorError(self.kind, None, f"cannot open {protocol}: {exc}") from exc
        self.root = root.rstrip("/")
        self._root_stripped = self.fs._strip_protocol(self.root)
        self._serial = protocol not in THREAD_SAFE_PROTOCOLS
        self._lock: contextlib.AbstractContextManager[Any] = (
            threading.Lock() if self._serial else contextlib.nullcontext()
        )
        self.selection = selection or ItemSelection()
        self.subjects = subjects or SubjectsByPrefix()
        self.subjects_file = subjects_file
        self.page_size = page_size

    def _relative(self, name: str) -> str:
        # a listing's names are stripped of their protocol already: stripping
        # each again was a third of a local walk's time
        stripped = name if name.startswith(self._root_stripped) else self.fs._strip_protocol(name)
        return stripped[len(self._root_stripped) :].lstrip("/")

    def list_pages(self, cursor: str | None) -> Iterator[ListingPage]:
        # before the walk: an entry is racy against the earliest moment it could
        # have been looked at
        listed = time.time()
        try:
            with self._lock:
                if not self.fs.isdir(self.root):
                    raise ConnectorError(self.kind, None, f"{self.root} is not a folder")
                found = self.files()
                subjects = self._with_markers(found)
        except ConnectorError:
            raise
        except (OSError, ValueError) as exc:
            raise ConnectorError(self.kind, None, str(exc), retryable=True) from exc
        entries = sorted(
            (rel, info)
            for name, info in found.items()
            if self.selection.selects(rel := self._relative(name))
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
                        subjects=subjects.subjects_for(rel),
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

    def files(self) -> dict[str, Mapping[str, Any]]:
        """The files below the root (links and other entries are not), by full
        path, each with fsspec's info (size, mtime, inode, ETag where there is one).

        A local folder is walked with os.scandir: fsspec's walk built each
        entry's whole info and stripped its path's protocol twice. The inbox
        sensor walks every inbox folder each minute: for the 5,282 files of 100
        folders, fingerprints included, 0.188 CPU-s through fsspec and 0.102
        now, side by side, with the same files, sizes, mtimes and inodes
        (tests/unit/test_fsspec_versions.py). A folder it cannot read
        fails the listing (fsspec's walk left it out: its files would have
        looked deleted)."""
        if not isinstance(self.fs, LocalFileSystem):
            found = self.fs.find(self.root, detail=True)
            return {name: info for name, info in found.items() if info.get("type") == "file"}
        files: dict[str, Mapping[str, Any]] = {}
        folders = [self._root_stripped]
        while folders:
            folder = folders.pop()
            try:
                listing = os.scandir(folder)
            except FileNotFoundError:
                if folder == self._root_stripped:
                    raise
                continue  # removed since its parent was read: nothing below it is there
            with listing:
                for entry in listing:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        try:
                            stat = entry.stat(follow_symlinks=False)
                        except FileNotFoundError:
                            continue  # removed since the folder was read
                        files[entry.path] = {
                            "name": entry.path,
                            "type": "file",
                            "size": stat.st_size,
                            "mtime": stat.st_mtime,
                            "ino": stat.st_ino,
                        }
        return files

    def _with_markers(self, found: Mapping[str, Mapping[str, Any]]) -> SubjectsByPrefix:
        """The configured prefixes and, over them, the folders' own markers:
        a marker in `a/b/` is the prefix `a/b/` (the root's is ``), so the
        longest prefix — the nearest marker — wins. A marker in a hidden
        folder is ignored (nothing below it is listed); an empty or unreadable
        one sets nothing (its folder inherits)."""
        if not self.subjects_file:
            return self.subjects
        prefixes = dict(self.subjects.prefixes)
        for name, info in found.items():
            if not name.endswith(self.subjects_file):
                continue
            rel = self._relative(name)
            folder, _, leaf = rel.rpartition("/")
            if leaf != self.subjects_file:
                continue
            if any(part.startswith(".") for part in folder.split("/") if part):
                continue
            if (info.get("size") or 0) > MAX_MARKER_BYTES:
                continue
            try:
                text = self.fs.cat_file(name).decode("utf-8", errors="replace")
            except OSError:
                continue
            lines = {line.strip() for line in text.splitlines()}
            found_subjects = tuple(sorted(x for x in lines if x and not x.startswith("#")))
            if found_subjects:
                prefixes[f"{folder}/" if folder else ""] = found_subjects
        return SubjectsByPrefix(prefixes)

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
