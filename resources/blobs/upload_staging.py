"""The UploadStaging port on a local folder: one file per session, written at
the acknowledged offset (a retried part overwrites, never appends twice), put
into the blob store at completion. Never holds a whole upload in memory.

For a folder blob store (one host): the extra local copy costs little there.
A bucket gets resources/blobs/s3_staging.py, which sends parts on as they come.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from collections.abc import Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import BinaryIO

from groundwork.catalog import TENANT_ID
from groundwork.errors import NotFound, StoreError
from groundwork.ports import BlobStore
from groundwork.upload_staging import SealedUpload, StagedItem, StagedTooLarge

UPLOAD_ID = re.compile(r"^upl_[0-9a-f]{32}$")
_PIECE = 1024 * 1024


def checked_ids(tenant_id: str, upload_id: str) -> None:
    """Both ids become part of a path or an object name: refuse anything else."""
    if not UPLOAD_ID.match(upload_id):
        raise StoreError(f"invalid upload id {upload_id!r}")
    if not TENANT_ID.match(tenant_id):
        raise StoreError(f"invalid tenant id {tenant_id!r}")


class FilesystemUploadStaging:
    def __init__(self, root: Path, blobs: BlobStore) -> None:
        self.root = root
        self.blobs = blobs
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, tenant_id: str, upload_id: str) -> Path:
        checked_ids(tenant_id, upload_id)
        return self.root / tenant_id / f"{upload_id}.part"

    def begin(self, tenant_id: str, upload_id: str) -> None:
        """The staged file, created empty (a zero-byte upload has one too)."""
        path = self._path(tenant_id, upload_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)

    def write(
        self,
        tenant_id: str,
        upload_id: str,
        offset: int,
        pieces: Iterable[bytes],
        *,
        room: int,
        length: int | None = None,
    ) -> int:
        """`length` is not needed: the file takes the pieces as they come."""
        path = self._path(tenant_id, upload_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        with open(path, "r+b" if path.exists() else "w+b") as handle:
            handle.seek(offset)
            for part in pieces:
                if written + len(part) > room:
                    handle.truncate(offset)
                    raise StagedTooLarge(f"more than {room} bytes after offset {offset}")
                handle.write(part)
                written += len(part)
            handle.truncate(offset + written)
            handle.flush()
            os.fsync(handle.fileno())
        return written

    def acknowledged(self, tenant_id: str, upload_id: str, offset: int) -> None:
        """Nothing to do: the file is the state."""

    def seal(self, tenant_id: str, upload_id: str, size: int) -> SealedUpload:
        """Hashed in pieces from the file (today's behaviour on one host)."""
        path = self._path(tenant_id, upload_id)
        if not path.exists():
            if size:
                raise NotFound(f"no staged bytes for upload {upload_id}")
            self.begin(tenant_id, upload_id)
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            while piece := handle.read(_PIECE):
                digest.update(piece)
        if path.stat().st_size != size:
            raise StoreError(f"upload {upload_id} staged {path.stat().st_size} of {size} bytes")
        return SealedUpload(size, digest.hexdigest())

    def open(self, tenant_id: str, upload_id: str) -> BinaryIO:
        try:
            return self._path(tenant_id, upload_id).open("rb")
        except FileNotFoundError:
            raise NotFound(f"no staged bytes for upload {upload_id}") from None

    def place(self, tenant_id: str, upload_id: str, key: str) -> None:
        self.blobs.put_file(key, self._path(tenant_id, upload_id))

    def discard(self, tenant_id: str, upload_id: str) -> None:
        self._path(tenant_id, upload_id).unlink(missing_ok=True)

    def discard_tenant(self, tenant_id: str) -> int:
        checked_ids(tenant_id, "upl_" + "0" * 32)
        folder = self.root / tenant_id
        if not folder.is_dir():
            return 0
        count = sum(1 for _ in folder.glob("*.part"))
        shutil.rmtree(folder)
        return count

    def expire(self, age: timedelta) -> int:
        cutoff = time.time() - age.total_seconds()
        gone = 0
        for path in list(self.root.glob("*/*.part")):
            if path.stat().st_mtime < cutoff:
                path.unlink(missing_ok=True)
                gone += 1
        return gone

    def staged(self) -> Iterator[StagedItem]:
        now = time.time()
        for path in sorted(self.root.glob("*/*.part")):
            yield StagedItem(path.relative_to(self.root).as_posix(), now - path.stat().st_mtime)
