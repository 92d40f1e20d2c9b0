"""The BlobStore port while bytes move from one store to another (a folder to
a bucket): writes go to the new store, reads try it first and fall back to
the old one, deletes reach both. With it the platform switches to the new
store before the last migration pass, and no read fails in between: a file
registered on the old store after the previous pass is still found there
(GROUNDWORK_BLOB_READ_FALLBACK=filesystem; docs/object-storage.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import timedelta
from pathlib import Path

from groundwork.errors import NotFound
from groundwork.ports import BlobStore


class MigratingBlobStore:
    def __init__(self, new: BlobStore, old: BlobStore) -> None:
        self.new = new
        self.old = old

    def __repr__(self) -> str:
        return f"MigratingBlobStore(new={self.new!r}, old={self.old!r})"

    def put(self, key: str, data: bytes) -> None:
        self.new.put(key, data)

    def put_file(self, key: str, source: Path) -> None:
        self.new.put_file(key, source)

    def put_stream(self, key: str, pieces: Iterable[bytes]) -> None:
        self.new.put_stream(key, pieces)

    def _holder(self, key: str) -> BlobStore:
        return self.new if self.new.exists(key) or not self.old.exists(key) else self.old

    def get(self, key: str) -> bytes:
        try:
            return self.new.get(key)
        except NotFound:
            return self.old.get(key)

    def read_chunks(
        self, key: str, chunk_size: int = 0, *, offset: int = 0, length: int | None = None
    ) -> Iterator[bytes]:
        yield from self._holder(key).read_chunks(key, chunk_size, offset=offset, length=length)

    def exists(self, key: str) -> bool:
        return self.new.exists(key) or self.old.exists(key)

    def delete(self, key: str) -> None:
        """Both copies: erasure must not leave the old one behind."""
        self.new.delete(key)
        self.old.delete(key)

    def list_keys(self) -> Iterator[str]:
        seen: set[str] = set()
        for key in self.new.list_keys():
            seen.add(key)
            yield key
        for key in self.old.list_keys():
            if key not in seen:
                yield key

    def incomplete_writes(self) -> Iterator[str]:
        yield from self.new.incomplete_writes()
        yield from self.old.incomplete_writes()

    def presign_get(
        self, key: str, lifetime: timedelta, *, content_type: str, content_disposition: str
    ) -> str | None:
        """Signed by the store that holds the key (None: the read is proxied)."""
        return self._holder(key).presign_get(
            key, lifetime, content_type=content_type, content_disposition=content_disposition
        )
