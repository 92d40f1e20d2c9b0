"""Where upload parts wait until the session completes: one file per session,
written at the acknowledged offset (a retried part overwrites, never appends
twice). Never holds a whole upload in memory."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from groundwork.errors import StoreError

_ID = re.compile(r"^upl_[0-9a-f]{32}$")


class UploadStaging:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, upload_id: str) -> Path:
        if not _ID.match(upload_id):
            raise StoreError(f"invalid upload id {upload_id!r}")
        return self.root / f"{upload_id}.part"

    def write_at(self, upload_id: str, offset: int, chunks: Iterator[bytes]) -> int:
        """Write chunks starting at `offset`; return the bytes written."""
        path = self._path(upload_id)
        written = 0
        with open(path, "r+b" if path.exists() else "w+b") as handle:
            handle.seek(offset)
            for chunk in chunks:
                handle.write(chunk)
                written += len(chunk)
            handle.truncate(offset + written)
            handle.flush()
            os.fsync(handle.fileno())
        return written

    def read(self, upload_id: str) -> bytes:
        return self._path(upload_id).read_bytes()

    def discard(self, upload_id: str) -> None:
        self._path(upload_id).unlink(missing_ok=True)
