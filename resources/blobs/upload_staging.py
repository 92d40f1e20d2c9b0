"""Where upload parts wait until the session completes: one file per session,
written at the acknowledged offset (a retried part overwrites, never appends
twice). Never holds a whole upload in memory."""

from __future__ import annotations

import re
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

    def path(self, upload_id: str) -> Path:
        return self._path(upload_id)

    def ensure(self, upload_id: str) -> Path:
        """The staged file, created empty for a zero-byte upload."""
        path = self._path(upload_id)
        path.touch(exist_ok=True)
        return path

    def discard(self, upload_id: str) -> None:
        self._path(upload_id).unlink(missing_ok=True)
