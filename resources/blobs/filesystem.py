"""The BlobStore port on a local folder (an object store implements the same port).

Writes go to a temporary file in the same directory and are renamed into
place after fsync, so a crash never leaves a half-written blob under its key.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import BinaryIO

from groundwork.errors import NotFound, StoreError

_CHUNK = 1024 * 1024
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-/.]{0,250}$")


class FilesystemBlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        if not _KEY.match(key) or ".." in key.split("/"):
            raise StoreError(f"invalid blob key {key!r}")
        return self.root / key

    def put(self, key: str, data: bytes) -> None:
        self._write(key, len(data), lambda handle: handle.write(data))

    def put_file(self, key: str, source: Path) -> None:
        """Store a file's bytes without holding them in memory (large uploads)."""

        def copy(handle: BinaryIO) -> None:
            with source.open("rb") as reader:
                shutil.copyfileobj(reader, handle, _CHUNK)

        self._write(key, source.stat().st_size, copy)

    def put_stream(self, key: str, pieces: Iterable[bytes]) -> None:
        """The pieces go to the temporary file; an exception from them removes it."""

        def fill(handle: BinaryIO) -> None:
            for piece in pieces:
                handle.write(piece)

        self._write(key, None, fill)

    def _write(self, key: str, size: int | None, fill: Callable[[BinaryIO], object]) -> None:
        """Temp file in the same folder, fsync, rename: never a half-written blob.
        Any exception while filling it (not only OSError) removes the temp file."""
        path = self._path(key)
        if size is not None and path.exists() and path.stat().st_size == size:
            return  # content-addressed: the same key holds the same bytes
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".incoming-")
        try:
            with os.fdopen(fd, "wb") as handle:
                fill(handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise StoreError(f"could not store blob: {exc}") from exc
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def read_chunks(
        self, key: str, chunk_size: int = 0, *, offset: int = 0, length: int | None = None
    ) -> Iterator[bytes]:
        """The bytes in pieces, so a large file is served without loading it whole.
        A missing key raises NotFound on the first piece."""
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("a range starts at 0 or later and has a length of 0 or more")
        try:
            handle = self._path(key).open("rb")
        except FileNotFoundError:
            raise NotFound(f"blob {key} not found") from None
        with handle:
            handle.seek(offset)
            left = length
            while left is None or left > 0:
                want = chunk_size or _CHUNK
                piece = handle.read(want if left is None else min(want, left))
                if not piece:
                    return
                if left is not None:
                    left -= len(piece)
                yield piece

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise NotFound(f"blob {key} not found") from None

    def exists(self, key: str) -> bool:
        return self._path(key).exists()

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def presign_get(
        self, key: str, lifetime: timedelta, *, content_type: str, content_disposition: str
    ) -> str | None:
        """A folder cannot sign a URL: reads are proxied through the API."""
        return None

    def incomplete_writes(self) -> Iterator[str]:
        """Temporary files a killed write left behind (a live write's too: it
        is reported, never removed, as reconciliation never deletes)."""
        for path in sorted(self.root.rglob(".incoming-*")):
            yield path.relative_to(self.root).as_posix()

    def list_keys(self) -> Iterator[str]:
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and not path.name.startswith(".incoming-"):
                yield path.relative_to(self.root).as_posix()
