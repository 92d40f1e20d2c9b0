"""The UploadStaging port on the bucket itself: each upload session is one S3
multipart upload under `uploads/<tenant>/<upload id>` (in the blob store's
prefix), and every part goes on to the bucket as it arrives.

Why: staging parts on the API's disk and putting the file again at
completion added the whole S3 write after the transfer (50-53% of the
filesystem path's throughput, docs/object-storage.md). Now the transfer is
the write, and completion is a server-side CopyObject to the content key.

S3 refuses parts under 5 MiB except the last, and an acknowledged part must
be durable, so the bytes of a request are cut into parts as they come (at
most `part_size` + 5 MiB buffered, PARTS_IN_FLIGHT on the wire) and what is
left at the end of a request that is not the session's last byte goes, when
under 5 MiB, into a small "tail" object named by the offset it ends at
(`<key>.tail-<end>`): the next request starts its first part with it. A tail
is named by its end so a failed or lost attempt never overwrites the tail an
acknowledged offset needs; old tails are deleted once the next part is
acknowledged.

The SHA-256 of the whole upload is computed as the parts arrive and kept in
this process, per session, with the offset it covers. A part that reaches
another API process (or this one after a restart) finds no running digest:
its state is read back from the bucket (ListParts, the tail at the
acknowledged offset) and at seal the completed staging object is hashed by
streaming it once. Each part carries its own SHA-256, which the server
checks, and at seal the parts the bucket lists (ETag, the part's MD5, and
size) are compared with the ones this process sent: a part overwritten by a
concurrent request at the same offset is caught there, and the object is
hashed again instead of trusting the running digest.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import queue
import threading
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO

from groundwork.errors import NotFound, StoreError
from groundwork.upload_staging import SealedUpload, StagedItem, StagedTooLarge
from resources.blobs.s3 import S3BlobStore, translated
from resources.blobs.upload_staging import checked_ids

#: S3's smallest part but the last
MIN_PART = 5 * 1024 * 1024
#: sessions whose running digest this process keeps (a few hundred bytes each)
CACHED_SESSIONS = 1024
_FOLDER = "uploads/"


@dataclass(frozen=True, slots=True)
class _Part:
    number: int
    etag: str
    size: int
    checksum: str  # base64 SHA-256 of the part, as S3 reports it


@dataclass(slots=True)
class _Session:
    upload: str  # the multipart upload's id
    parts: tuple[_Part, ...]
    offset: int  # acknowledged bytes: the parts, then the tail
    tail: int  # bytes in the tail object ending at `offset` (0: none)
    digest: Any | None  # SHA-256 of [0, offset); None when read back from the bucket
    stale_tail: int | None = None  # the end of a tail to delete once acknowledged
    sealed: SealedUpload | None = field(default=None)


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


class S3UploadStaging:
    def __init__(self, store: S3BlobStore, *, part_size: int | None = None) -> None:
        self.store = store
        self.part_size = max(MIN_PART, part_size or store.part_size)
        self._client = store.client
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._pending: dict[str, _Session] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"S3UploadStaging({self.store!r})"

    # names
    def _key(self, tenant_id: str, upload_id: str) -> str:
        checked_ids(tenant_id, upload_id)
        return f"{_FOLDER}{tenant_id}/{upload_id}"

    def _tail(self, key: str, end: int) -> str:
        return f"{key}.tail-{end}"

    def _name(self, key: str) -> str:
        return self.store.object_name(key)

    # the session's state
    def begin(self, tenant_id: str, upload_id: str) -> None:
        key = self._key(tenant_id, upload_id)
        with translated(f"upload {upload_id}"):
            # no ChecksumAlgorithm on the upload: SeaweedFS then wants every
            # part's checksum at completion but ListParts does not return them,
            # so a session read back by another process could never complete.
            # Each part is still sent with its SHA-256, which the server checks.
            upload = self._client.create_multipart_upload(
                Bucket=self.store.bucket, Key=self._name(key)
            )["UploadId"]
        self._remember(upload_id, _Session(upload, (), 0, 0, hashlib.sha256()))

    def _remember(self, upload_id: str, session: _Session) -> None:
        with self._lock:
            self._sessions[upload_id] = session
            self._sessions.move_to_end(upload_id)
            while len(self._sessions) > CACHED_SESSIONS:
                self._sessions.popitem(last=False)

    def _session(self, key: str, upload_id: str, offset: int) -> _Session:
        """The acknowledged state at `offset`: this process's, or read back."""
        with self._lock:
            cached = self._sessions.get(upload_id)
        if cached is not None and cached.offset == offset and cached.sealed is None:
            return replace(cached, digest=cached.digest.copy() if cached.digest else None)
        uploads = [u for k, u in self.store.incomplete_uploads(prefix=key) if k == key]
        if not uploads:
            raise NotFound(f"the staged parts of {key} are gone; start a new upload session")
        tail = self.store.size_of(self._tail(key, offset)) or 0
        for upload in uploads:  # two only if two processes began one session at once
            parts = self._acknowledged_parts(key, upload, offset - tail)
            if parts is not None:
                return _Session(upload, parts, offset, tail, None)
        raise StoreError(f"the staged parts of {key} do not add up to {offset} bytes")

    def _acknowledged_parts(self, key: str, upload: str, length: int) -> tuple[_Part, ...] | None:
        """Parts 1.. that add up to `length`; later ones are a lost attempt's."""
        parts: list[_Part] = []
        total = 0
        with translated(f"parts of {key}"):
            pages = self._client.get_paginator("list_parts").paginate(
                Bucket=self.store.bucket, Key=self._name(key), UploadId=upload
            )
            for page in pages:
                for item in page.get("Parts", ()):
                    if total == length:
                        return tuple(parts)
                    if int(item["PartNumber"]) != len(parts) + 1:
                        return None
                    part = _Part(
                        int(item["PartNumber"]),
                        str(item["ETag"]),
                        int(item["Size"]),
                        str(item.get("ChecksumSHA256", "")),
                    )
                    parts.append(part)
                    total += part.size
        return tuple(parts) if total == length else None

    # writes
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
        """A request whose length is known and makes a valid part (with the
        tail before it: at least 5 MiB, or the session's last byte) streams
        on to the bucket as one part while it arrives; any other is cut into
        parts in memory."""
        key = self._key(tenant_id, upload_id)
        if room == 0:  # sealed or empty: nothing may arrive, and nothing to send
            if any(pieces):
                raise StagedTooLarge(f"no room after offset {offset}")
            return 0
        session = self._session(key, upload_id, offset)
        if length and length <= room and (session.tail + length >= MIN_PART or length == room):
            return self._write_streamed(key, upload_id, session, pieces, length)
        buffer = _Buffer()
        if session.tail:
            buffer.add(self.store.get(self._tail(key, offset)))
        sender = _PartSender(self, key, session.upload, len(session.parts) + 1)
        written = 0
        tail = 0
        try:
            for piece in pieces:
                if written + len(piece) > room:
                    raise StagedTooLarge(f"more than {room} bytes after offset {offset}")
                if session.digest is not None:
                    session.digest.update(piece)
                buffer.add(piece)
                written += len(piece)
                while len(buffer) >= self.part_size + MIN_PART:
                    sender.send(buffer.take(self.part_size))
            rest = buffer.take(len(buffer))
            if rest and (written == room or len(rest) >= MIN_PART):
                sender.send(rest)
            elif rest:
                self.store.put(self._tail(key, offset + written), rest)
                tail = len(rest)
            del rest
            parts = sender.finish()
        finally:
            sender.close()
        self._pending[upload_id] = _Session(
            session.upload,
            session.parts + parts,
            offset + written,
            tail,
            session.digest,
            stale_tail=offset if session.tail else None,
        )
        return written

    def _write_streamed(
        self, key: str, upload_id: str, session: _Session, pieces: Iterable[bytes], length: int
    ) -> int:
        """One part of the tail and `length` request bytes, sent while they
        arrive (the transfer and the store's write overlap; a few pieces in
        memory). Without a SHA-256 known before the body, the part is checked
        by its ETag: the MD5 of what was sent."""
        offset = session.offset
        body = _PipeBody(session.tail + length)
        number = len(session.parts) + 1
        md5 = hashlib.md5(usedforsecurity=False)
        with ThreadPoolExecutor(1, thread_name_prefix="s3-stage") as pool:
            sending = pool.submit(self._send_streamed, key, session.upload, number, body)
            try:
                if session.tail:
                    head = self.store.get(self._tail(key, offset))
                    md5.update(head)
                    body.feed(head, sending)
                written = 0
                for piece in pieces:
                    if written + len(piece) > length:
                        raise StagedTooLarge(f"more than {length} bytes after offset {offset}")
                    written += len(piece)
                    if session.digest is not None:
                        session.digest.update(piece)
                    md5.update(piece)
                    body.feed(piece, sending)
                if written != length:
                    raise StoreError(f"the part carried {written} of its {length} bytes")
            except BaseException:
                body.fail()
                with contextlib.suppress(Exception):
                    sending.result()
                raise
            body.end()
            etag = sending.result()
        if etag.strip('"') != md5.hexdigest():
            raise StoreError(f"the bucket stored other bytes for part {number} of {key}")
        part = _Part(number, etag, session.tail + length, "")
        self._pending[upload_id] = _Session(
            session.upload,
            (*session.parts, part),
            offset + length,
            0,
            session.digest,
            stale_tail=offset if session.tail else None,
        )
        return length

    def _send_streamed(self, key: str, upload: str, number: int, body: _PipeBody) -> str:
        with translated(f"{key} part {number}"):
            answer = self._client.upload_part(
                Bucket=self.store.bucket,
                Key=self._name(key),
                UploadId=upload,
                PartNumber=number,
                Body=body,
                ContentLength=body.total,
            )
        return str(answer["ETag"])

    def acknowledged(self, tenant_id: str, upload_id: str, offset: int) -> None:
        key = self._key(tenant_id, upload_id)
        pending = self._pending.pop(upload_id, None)
        if pending is None or pending.offset != offset:
            return
        stale, pending.stale_tail = pending.stale_tail, None
        self._remember(upload_id, pending)
        if stale is not None and stale != offset:
            with contextlib.suppress(StoreError):  # left over, discard removes it
                self.store.delete(self._tail(key, stale))

    def send_part(self, key: str, upload: str, number: int, body: bytes) -> _Part:
        digest = _b64(hashlib.sha256(body).digest())
        with translated(f"{key} part {number}"):
            answer = self._client.upload_part(
                Bucket=self.store.bucket,
                Key=self._name(key),
                UploadId=upload,
                PartNumber=number,
                Body=body,
                ChecksumSHA256=digest,
            )
        return _Part(number, str(answer["ETag"]), len(body), digest)

    # completion
    def seal(self, tenant_id: str, upload_id: str, size: int) -> SealedUpload:
        key = self._key(tenant_id, upload_id)
        with self._lock:
            cached = self._sessions.get(upload_id)
        if cached is not None and cached.sealed is not None:
            return cached.sealed
        if self.store.size_of(key) == size and not any(
            k == key for k, _ in self.store.incomplete_uploads(prefix=key)
        ):
            # sealed before (by another process, or before a refusal)
            sealed = SealedUpload(size, self._hash(key))
            self._remember(upload_id, _Session("", (), size, 0, None, sealed=sealed))
            return sealed
        session = self._session(key, upload_id, size)
        parts = session.parts
        if session.tail:
            body = self.store.get(self._tail(key, size))
            parts += (self.send_part(key, session.upload, len(parts) + 1, body),)
        if parts:
            trusted = session.digest is not None and self._parts_are(key, session.upload, parts)
            self._complete(key, session.upload, parts)
        else:
            self.store.put(key, b"")
            self._abort(key, session.upload)
            trusted = True
        if self.store.size_of(key) != size:
            raise StoreError(f"{key} holds other than the {size} bytes acknowledged")
        digest = session.digest.hexdigest() if trusted and session.digest else self._hash(key)
        sealed = SealedUpload(size, digest)
        self._remember(upload_id, replace(session, digest=None, sealed=sealed))
        return sealed

    def _parts_are(self, key: str, upload: str, parts: tuple[_Part, ...]) -> bool:
        """The bucket holds exactly the parts this process sent (same ETag,
        the MD5 of each part, and size): else a request racing at the same
        offset replaced one, and the running digest is not of these bytes."""
        stored = self._acknowledged_parts(key, upload, sum(p.size for p in parts))
        return stored is not None and [(p.etag, p.size) for p in stored] == [
            (p.etag, p.size) for p in parts
        ]

    def _complete(self, key: str, upload: str, parts: tuple[_Part, ...]) -> None:
        listed = [{"PartNumber": p.number, "ETag": p.etag} for p in parts]
        with translated(f"staging object {key}"):
            self._client.complete_multipart_upload(
                Bucket=self.store.bucket,
                Key=self._name(key),
                UploadId=upload,
                MultipartUpload={"Parts": listed},
            )

    def _hash(self, key: str) -> str:
        digest = hashlib.sha256()
        for piece in self.store.read_chunks(key):
            digest.update(piece)
        return digest.hexdigest()

    def open(self, tenant_id: str, upload_id: str) -> BinaryIO:
        key = self._key(tenant_id, upload_id)
        size = self.store.size_of(key)
        if size is None:
            raise NotFound(f"upload {upload_id} is not sealed")
        return io.BufferedReader(_RangedReader(self.store, key, size), 256 * 1024)  # type: ignore[return-value]

    def place(self, tenant_id: str, upload_id: str, key: str) -> None:
        """Server-side copy (no byte passes through this process), then the
        size checked; an object already under `key` with that size is kept."""
        staged = self._key(tenant_id, upload_id)
        size = self.store.size_of(staged)
        if size is None:
            raise NotFound(f"upload {upload_id} is not sealed")
        if self.store.size_of(key) == size:
            return
        with translated(f"blob {key}"):
            self._client.copy_object(
                Bucket=self.store.bucket,
                Key=self._name(key),
                CopySource={"Bucket": self.store.bucket, "Key": self._name(staged)},
            )
        if self.store.size_of(key) != size:
            self.store.delete(key)
            raise StoreError(f"the copy of upload {upload_id} to {key} is incomplete")

    # removal and listing
    def discard(self, tenant_id: str, upload_id: str) -> None:
        self._remove(self._key(tenant_id, upload_id))
        with self._lock:
            self._sessions.pop(upload_id, None)
            self._pending.pop(upload_id, None)

    def discard_tenant(self, tenant_id: str) -> int:
        checked_ids(tenant_id, "upl_" + "0" * 32)
        return self._remove(f"{_FOLDER}{tenant_id}/")

    def _remove(self, prefix: str) -> int:
        """Abort the uploads and delete the objects under `prefix`; how many
        sessions they were."""
        sessions: set[str] = set()
        for key, upload in list(self.store.incomplete_uploads(prefix=prefix)):
            self._abort(key, upload)
            sessions.add(key)
        for key, _ in list(self._objects(prefix)):
            self.store.delete(key)
            sessions.add(key.split(".tail-", 1)[0])
        return len(sessions)

    def _abort(self, key: str, upload: str) -> None:
        with translated(f"upload of {key}"), contextlib.suppress(NotFound):
            self._client.abort_multipart_upload(
                Bucket=self.store.bucket, Key=self._name(key), UploadId=upload
            )

    def _objects(self, prefix: str) -> Iterator[tuple[str, datetime]]:
        with translated(f"bucket {self.store.bucket}"):
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.store.bucket, Prefix=self._name(prefix)
            )
            for page in pages:
                for item in page.get("Contents", ()):
                    yield str(item["Key"])[len(self.store.prefix) :], item["LastModified"]

    def _uploads(self) -> Iterator[tuple[str, str, datetime]]:
        with translated(f"bucket {self.store.bucket}"):
            pages = self._client.get_paginator("list_multipart_uploads").paginate(
                Bucket=self.store.bucket, Prefix=self._name(_FOLDER)
            )
            for page in pages:
                for item in page.get("Uploads", ()):
                    key = str(item["Key"])[len(self.store.prefix) :]
                    yield key, str(item["UploadId"]), item["Initiated"]

    def expire(self, age: timedelta) -> int:
        cutoff = datetime.now(UTC) - age
        gone = 0
        for key, upload, initiated in list(self._uploads()):
            if initiated < cutoff:
                self._abort(key, upload)
                gone += 1
        for key, modified in list(self._objects(_FOLDER)):
            if modified < cutoff:
                self.store.delete(key)
                gone += 1
        return gone

    def staged(self) -> Iterator[StagedItem]:
        now = datetime.now(UTC)
        for key, _, initiated in self._uploads():
            yield StagedItem(key, (now - initiated).total_seconds())
        for key, modified in self._objects(_FOLDER):
            yield StagedItem(key, (now - modified).total_seconds())


class _Buffer:
    """Pieces held until they make a part; each part joined once."""

    def __init__(self) -> None:
        self._pieces: deque[bytes] = deque()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, piece: bytes) -> None:
        if piece:
            self._pieces.append(piece)
            self._size += len(piece)

    def take(self, size: int) -> bytes:
        taken: list[bytes] = []
        need = min(size, self._size)
        while need:
            piece = self._pieces.popleft()
            if len(piece) > need:
                self._pieces.appendleft(piece[need:])
                piece = piece[:need]
            taken.append(piece)
            need -= len(piece)
            self._size -= len(piece)
        return b"".join(taken)


class _PartSender:
    """Parts of one request on the wire, PARTS_IN_FLIGHT at once (the next
    part is cut while one is sent), numbered from `first`."""

    def __init__(self, staging: S3UploadStaging, key: str, upload: str, first: int) -> None:
        self._staging = staging
        self._key = key
        self._upload = upload
        self._number = first
        self._limit = staging.store.parts_in_flight
        self._sending: deque[Future[_Part]] = deque()
        self._done: list[_Part] = []
        self._pool: ThreadPoolExecutor | None = None

    def send(self, body: bytes) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._limit, thread_name_prefix="s3-stage")
        future = self._pool.submit(
            self._staging.send_part, self._key, self._upload, self._number, body
        )
        self._sending.append(future)
        self._number += 1
        while len(self._sending) >= self._limit:
            self._done.append(self._sending.popleft().result())

    def finish(self) -> tuple[_Part, ...]:
        while self._sending:
            self._done.append(self._sending.popleft().result())
        return tuple(self._done)

    def close(self) -> None:
        """Wait for parts still on the wire (a failed request's included)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


class _PipeBody(io.RawIOBase):
    """A part's body read by the sending thread while the request's thread
    feeds it: a short queue of pieces, so neither holds the part."""

    _END = b""

    def __init__(self, total: int) -> None:
        self.total = total
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=16)
        self._held = memoryview(b"")
        self._ended = False

    def readable(self) -> bool:
        return True

    def feed(self, piece: bytes, sending: Future[Any]) -> None:
        """Waits while the queue is full, unless the sender has stopped."""
        if not piece:
            return  # an empty piece would read as the end
        while True:
            if sending.done():
                sending.result()  # its error, or: it finished early
                raise StoreError("the part was sent before its last byte arrived")
            try:
                self._queue.put(piece, timeout=0.5)
                return
            except queue.Full:
                continue

    def end(self) -> None:
        self._put(self._END)

    def fail(self) -> None:
        """The sender's next read raises: the part is never completed."""
        self._put(None)

    def _put(self, item: bytes | None) -> None:
        with contextlib.suppress(queue.Full):
            self._queue.put(item, timeout=5)

    def read(self, size: int = -1) -> bytes:
        if not self._held and not self._ended:
            item = self._queue.get()
            if item is None:
                raise OSError("the request stopped before its part was complete")
            if item == self._END:
                self._ended = True
            self._held = memoryview(item)
        if size is None or size < 0:
            size = len(self._held)
        taken, self._held = self._held[:size], self._held[size:]
        return bytes(taken)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        memoryview(buffer).cast("B")[: len(data)] = data
        return len(data)


class _RangedReader(io.RawIOBase):
    """A seekable read-only view of an object by ranged GETs (sniffing reads
    the head and, for a ZIP, the central directory at the end)."""

    def __init__(self, store: S3BlobStore, key: str, size: int) -> None:
        self._store = store
        self._key = key
        self._size = size
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def tell(self) -> int:
        return self._position

    def readinto(self, buffer: Any) -> int:
        want = min(len(buffer), self._size - self._position)
        if want <= 0:
            return 0
        view = memoryview(buffer).cast("B")
        filled = 0
        for piece in self._store.read_chunks(self._key, offset=self._position, length=want):
            view[filled : filled + len(piece)] = piece
            filled += len(piece)
        self._position += filled
        return filled
