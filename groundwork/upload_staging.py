"""The UploadStaging port: where an open upload session's bytes wait.

Two adapters: a local file per session (resources/blobs/upload_staging.py),
for a folder blob store, and an S3 multipart upload per session
(resources/blobs/s3_staging.py), for a bucket, where each part goes on to the
bucket as it arrives instead of being staged on disk and put again at
completion (which halved upload throughput). The service
(groundwork/services/uploads.py) drives both the same way:

    begin -> write (at the acknowledged offset) -> acknowledged -> ... ->
    seal -> open (sniffing) -> place (under the content key) -> discard

Both adapters pass tests/conformance/test_upload_staging.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import BinaryIO, Protocol, runtime_checkable


class StagedTooLarge(Exception):
    """A part went past the room the session has left (its declared size)."""


@dataclass(frozen=True, slots=True)
class SealedUpload:
    """A session's bytes, complete: what registration needs before it writes."""

    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class StagedItem:
    """Bytes an open (or abandoned) session holds, for reconciliation: `key`
    is the blob store's key when the staging shares its store (S3), else a
    path under the staging folder."""

    key: str
    age_seconds: float | None


@runtime_checkable
class UploadStaging(Protocol):
    """The bytes of open upload sessions, held by the platform until completion.

    `write` puts a part at `offset`, the session's acknowledged offset, and is
    durable when it returns: the caller then acknowledges it (compare-and-set
    in the catalog) and calls `acknowledged`. A write that fails, or whose
    acknowledgement loses, changes nothing a later write at the same offset
    sees: a retry overwrites, never appends twice. A write never holds the
    whole part in memory (an adapter buffers at most a few of its own parts).
    A part past `room` raises StagedTooLarge and keeps nothing past `offset`.

    `seal` is called once every byte is acknowledged and may be called again
    (a completion refused for approval or quota is completed later): it
    answers the size and SHA-256 of the staged bytes. `open` reads the sealed
    bytes (seekable: sniffing reads a ZIP's central directory at the end).
    `place` stores them in the blob store under `key` (all or nothing, like a
    put; an object already there with the same size is kept). `discard` drops
    everything a session staged (an S3 multipart upload is aborted), and of a
    session that never staged anything does nothing. `discard_tenant` does it
    for every session of a tenant (erasure), `expire` for everything staged
    longer ago than `age` (sessions expire after 24 hours). `staged` lists
    what is staged, for reconciliation, which reports it and never deletes."""

    def begin(self, tenant_id: str, upload_id: str) -> None: ...

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
        """The bytes of `pieces` at `offset`; how many were written. `length`:
        how many bytes the request says it carries, when it says: an adapter
        may then send them on as they arrive instead of buffering a part (and
        fails the write if the pieces end short of it or run past it)."""
        ...

    def acknowledged(self, tenant_id: str, upload_id: str, offset: int) -> None:
        """The catalog acknowledged the bytes up to `offset`."""
        ...

    def seal(self, tenant_id: str, upload_id: str, size: int) -> SealedUpload: ...

    def open(self, tenant_id: str, upload_id: str) -> BinaryIO: ...

    def place(self, tenant_id: str, upload_id: str, key: str) -> None: ...

    def discard(self, tenant_id: str, upload_id: str) -> None: ...

    def discard_tenant(self, tenant_id: str) -> int:
        """How many sessions' bytes went."""
        ...

    def expire(self, age: timedelta) -> int:
        """How many staged items older than `age` went."""
        ...

    def staged(self) -> Iterator[StagedItem]: ...
