"""The BlobStore port on an S3-compatible bucket (AWS S3, SeaweedFS, MinIO, ...).

Why boto3: it is the reference client for the S3 API (the signing, retries
and error codes every S3-compatible server is tested against), it exposes
the per-part SHA-256 checksums this adapter verifies, and it signs GET URLs
locally (`presign_get`). Against obstore and through /v1/uploads it was
measured (bench/s3_clients.py, bench/upload.py; docs/object-storage.md).

Writes are all-or-nothing, as the filesystem adapter's rename is: a body
that fits one part is one PutObject; a larger one is a multipart upload whose
parts are read from the source as they are sent, PARTS_IN_FLIGHT at once
(never the whole file in memory), each sent with its SHA-256, which the
server checks (BadDigest otherwise). Nothing is readable under the key until CompleteMultipartUpload;
any failure before it aborts the upload, so an interrupted put leaves no
object and no stored parts. When the key is content-addressed
(`sha256/xx/<hex>`), the digest of the bytes actually read is compared with
the key before completing, and the server's checksum of the completed object
with the one computed locally: bytes that are not the key's never land.

Driver errors stop here: botocore's are translated into groundwork.errors
(a missing key is NotFound, an unreachable or throttling server
EngineUnavailable, anything else StoreError). Credentials live only in the
client; repr names the endpoint and bucket.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import re
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import botocore.exceptions
from botocore.config import Config

from groundwork.errors import EngineUnavailable, NotFound, StoreError

#: the part size of multipart uploads. S3's minimum part is 5 MiB.
PART_SIZE = 6 * 1024 * 1024
#: parts sent at once: the next part is read and hashed while one is on the
#: wire. Measured (100 MiB into SeaweedFS, raw boto3): one at a time 57-66
#: MiB/s, two 64-82, three of 5 MiB 62-81, four of 8 MiB 72-74; two parts of
#: 6 MiB keep what a put holds at 12 MiB (the API's budget is +32 MiB).
PARTS_IN_FLIGHT = 2
_READ_PIECE = 1024 * 1024
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-/.]{0,250}$")
_CONTENT_KEY = re.compile(r"^sha256/[0-9a-f]{2}/([0-9a-f]{64})$")
_MISSING = {"NoSuchKey", "404", "NotFound", "NoSuchUpload"}
_UNAVAILABLE = {"SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout", "503", "500"}
#: One boto3 session per process: a client made from a new session parses
#: botocore's service models again (~0.2 s of JSON per client, two clients in
#: every run worker). Making clients from one session is not thread-safe in
#: boto3, hence the lock; the clients themselves are.
_SESSION_LOCK = threading.Lock()
_SESSIONS: list[boto3.session.Session] = []


@dataclass(frozen=True, slots=True)
class S3Credentials:
    """An access key pair. The secret is left out of repr, so a settings
    object or an adapter printed in a log or a traceback never shows it."""

    access_key_id: str
    secret_access_key: str = field(repr=False)


def s3_client(
    endpoint: str | None, region: str, credentials: S3Credentials | None, *, path_style: bool
) -> Any:
    """A boto3 client signing with SigV4 (presigned GETs need it; SigV2 URLs
    were refused by SeaweedFS). No credentials: boto3's own chain (instance
    role, AWS_* variables), for a bucket on AWS itself."""
    keys: dict[str, str] = {}
    if credentials is not None:
        keys = {
            "aws_access_key_id": credentials.access_key_id,
            "aws_secret_access_key": credentials.secret_access_key,
        }
    with _SESSION_LOCK:
        if not _SESSIONS:
            _SESSIONS.append(boto3.session.Session())
        return _SESSIONS[0].client(
            "s3",
            endpoint_url=endpoint,
            region_name=region,
            config=Config(
                signature_version="s3v4",
                retries={"max_attempts": 3, "mode": "standard"},
                connect_timeout=5,
                read_timeout=60,
                # checksums only where this adapter asks for them (SHA-256 per part):
                # boto3's default CRC32 on every request is computed in Python
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
                # no second SHA-256 of each body for the signature (SigV4 over
                # plain http hashes the payload): the signed x-amz-checksum-sha256
                # header already binds the body, and the server checks it
                s3={
                    "addressing_style": "path" if path_style else "auto",
                    "payload_signing_enabled": False,
                },
            ),
            **keys,
        )


@contextlib.contextmanager
def translated(what: str) -> Iterator[None]:
    """botocore's exceptions become the project's, at this boundary."""
    try:
        yield
    except botocore.exceptions.ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in _MISSING:
            raise NotFound(f"{what} not found") from None
        if code in _UNAVAILABLE:
            raise EngineUnavailable(f"object storage is unavailable ({code}) for {what}") from exc
        raise StoreError(f"object storage refused {what}: {code}") from exc
    except (
        botocore.exceptions.EndpointConnectionError,
        botocore.exceptions.ConnectionError,
        botocore.exceptions.ReadTimeoutError,
        botocore.exceptions.ResponseStreamingError,
    ) as exc:
        raise EngineUnavailable(f"object storage cannot be reached for {what}: {exc}") from exc
    except botocore.exceptions.BotoCoreError as exc:
        raise StoreError(f"object storage client failed for {what}: {exc}") from exc


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


class S3BlobStore:
    def __init__(
        self,
        client: Any,
        bucket: str,
        *,
        prefix: str = "",
        part_size: int = PART_SIZE,
        parts_in_flight: int = PARTS_IN_FLIGHT,
    ) -> None:
        """`prefix`: a folder of the bucket this store keeps to (a bucket shared
        by deployments, or one per test); its keys are listed without it."""
        if part_size < 5 * 1024 * 1024:
            raise ValueError("S3 refuses multipart parts under 5 MiB (except the last)")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        self._client = client
        self.bucket = bucket
        self.prefix = prefix
        self.part_size = part_size
        self.parts_in_flight = max(1, parts_in_flight)

    def __repr__(self) -> str:
        return (
            f"S3BlobStore(endpoint={self._client.meta.endpoint_url!r}, "
            f"bucket={self.bucket!r}, prefix={self.prefix!r})"
        )

    @property
    def client(self) -> Any:
        """The boto3 client (the bucket's upload staging shares it)."""
        return self._client

    def object_name(self, key: str) -> str:
        return self._object(key)

    def size_of(self, key: str) -> int | None:
        """The object's size; None when there is none."""
        return self._size(key)

    def _object(self, key: str) -> str:
        """The object name of a key; keys are checked as the filesystem checks
        them, so both adapters accept and refuse the same keys."""
        if not _KEY.match(key) or ".." in key.split("/"):
            raise StoreError(f"invalid blob key {key!r}")
        return self.prefix + key

    def ensure_bucket(self) -> bool:
        """Create the bucket if absent (an operator's bucket is used as it is);
        True when this call created it."""
        with translated(f"bucket {self.bucket}"):
            try:
                self._client.head_bucket(Bucket=self.bucket)
                return False
            except botocore.exceptions.ClientError as exc:
                if str(exc.response.get("Error", {}).get("Code")) not in ("404", "NoSuchBucket"):
                    raise
            with contextlib.suppress(self._client.exceptions.BucketAlreadyOwnedByYou):
                self._client.create_bucket(Bucket=self.bucket)
                return True
            return False

    # writes
    def put(self, key: str, data: bytes) -> None:
        if self._has_size(key, len(data)):
            return  # content-addressed: the same key holds the same bytes
        self.put_stream(key, [data])

    def put_file(self, key: str, source: Path) -> None:
        """Streams the file in parts read as they are sent: at most
        PARTS_IN_FLIGHT parts (12 MiB) in memory, whatever the file's size."""
        size = source.stat().st_size
        if self._has_size(key, size):
            return
        with source.open("rb") as reader:
            if size <= self.part_size:
                self._put_single(key, reader.read())
            else:
                self._put_multipart(key, iter(lambda: reader.read(self.part_size), b""))

    def put_stream(self, key: str, pieces: Iterable[bytes]) -> None:
        parts = _parts(pieces, self.part_size)
        head = [next(parts, b"")]
        following = next(parts, None)
        if following is None:
            self._put_single(key, head.pop())
            return
        head.append(following)
        del following  # the list alone holds the first two parts, and lets them go
        self._put_multipart(key, _drain(head, parts))

    def _put_single(self, key: str, body: bytes) -> None:
        digest = hashlib.sha256(body)
        self._check_content_key(key, digest)
        with translated(f"blob {key}"):
            answer = self._client.put_object(
                Bucket=self.bucket,
                Key=self._object(key),
                Body=body,
                ChecksumSHA256=_b64(digest.digest()),
            )
        if answer.get("ChecksumSHA256") not in (None, _b64(digest.digest())):
            self._delete_object(key)
            raise StoreError(f"object storage stored other bytes under {key}")

    def _put_multipart(self, key: str, parts: Iterator[bytes]) -> None:
        with translated(f"blob {key}"):
            upload_id = self._client.create_multipart_upload(
                Bucket=self.bucket, Key=self._object(key), ChecksumAlgorithm="SHA256"
            )["UploadId"]
        try:
            self._upload_parts(key, upload_id, parts)
        except BaseException:
            # nothing becomes readable: the parts are dropped with the upload
            with contextlib.suppress(Exception):
                self._client.abort_multipart_upload(
                    Bucket=self.bucket, Key=self._object(key), UploadId=upload_id
                )
            raise

    def _upload_parts(self, key: str, upload_id: str, parts: Iterator[bytes]) -> None:
        whole = hashlib.sha256()
        done: list[dict[str, Any]] = []
        part_digests: list[bytes] = []
        sending: deque[Future[dict[str, Any]]] = deque()
        with ThreadPoolExecutor(self.parts_in_flight, thread_name_prefix="s3-part") as pool:
            for number, body in enumerate(parts, start=1):
                whole.update(body)
                digest = hashlib.sha256(body).digest()
                part_digests.append(digest)
                sending.append(pool.submit(self._send_part, key, upload_id, number, body, digest))
                del body  # the pool holds it until sent
                while len(sending) >= self.parts_in_flight:
                    done.append(sending.popleft().result())  # a failed part raises here
            while sending:
                done.append(sending.popleft().result())
        self._check_content_key(key, whole)
        with translated(f"blob {key}"):
            answer = self._client.complete_multipart_upload(
                Bucket=self.bucket,
                Key=self._object(key),
                UploadId=upload_id,
                MultipartUpload={"Parts": done},
            )
        # S3's checksum of a multipart object is the SHA-256 of the parts'
        # SHA-256s, "-<parts>": compare it with the one made from the bytes read
        expected = f"{_b64(hashlib.sha256(b''.join(part_digests)).digest())}-{len(done)}"
        reported = answer.get("ChecksumSHA256")
        if reported is not None and reported not in (expected, expected.rsplit("-", 1)[0]):
            self._delete_object(key)
            raise StoreError(f"object storage's checksum of {key} differs from ours")

    def _send_part(
        self, key: str, upload_id: str, number: int, body: bytes, digest: bytes
    ) -> dict[str, Any]:
        with translated(f"blob {key} part {number}"):
            answer = self._client.upload_part(
                Bucket=self.bucket,
                Key=self._object(key),
                UploadId=upload_id,
                PartNumber=number,
                Body=body,
                ChecksumSHA256=_b64(digest),
            )
        return {"PartNumber": number, "ETag": answer["ETag"], "ChecksumSHA256": _b64(digest)}

    def _check_content_key(self, key: str, whole: Any) -> None:
        match = _CONTENT_KEY.match(key)
        if match and match.group(1) != whole.hexdigest():
            raise StoreError(f"the bytes read for {key} are not the bytes it names")

    # reads
    def get(self, key: str) -> bytes:
        with translated(f"blob {key}"):
            return bytes(
                self._client.get_object(Bucket=self.bucket, Key=self._object(key))["Body"].read()
            )

    def read_chunks(
        self, key: str, chunk_size: int = 0, *, offset: int = 0, length: int | None = None
    ) -> Iterator[bytes]:
        """Streamed from one GET (ranged when offset/length ask for less)."""
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("a range starts at 0 or later and has a length of 0 or more")
        request: dict[str, str] = {"Bucket": self.bucket, "Key": self._object(key)}
        if length == 0:
            if not self.exists(key):
                raise NotFound(f"blob {key} not found")
            return
        if offset or length is not None:
            end = "" if length is None else str(offset + length - 1)
            request["Range"] = f"bytes={offset}-{end}"
        with translated(f"blob {key}"):
            try:
                body = self._client.get_object(**request)["Body"]
            except botocore.exceptions.ClientError as exc:
                if exc.response.get("Error", {}).get("Code") == "InvalidRange":
                    # past the end: nothing (but a missing key is still NotFound)
                    if not self.exists(key):
                        raise NotFound(f"blob {key} not found") from None
                    return
                raise
        with translated(f"blob {key}"), contextlib.closing(body):
            yield from body.iter_chunks(chunk_size or _READ_PIECE)

    def exists(self, key: str) -> bool:
        return self._size(key) is not None

    def _size(self, key: str) -> int | None:
        try:
            with translated(f"blob {key}"):
                return int(
                    self._client.head_object(Bucket=self.bucket, Key=self._object(key))[
                        "ContentLength"
                    ]
                )
        except NotFound:
            return None

    def _has_size(self, key: str, size: int) -> bool:
        return self._size(key) == size

    # removal and listing
    def delete(self, key: str) -> None:
        """The object and any upload of that key that never completed (its
        parts are stored bytes too, invisible to a listing of objects)."""
        for upload_key, upload_id in self.incomplete_uploads(prefix=key):
            if upload_key == key:
                with translated(f"upload of {key}"), contextlib.suppress(NotFound):
                    self._client.abort_multipart_upload(
                        Bucket=self.bucket, Key=self._object(key), UploadId=upload_id
                    )
        self._delete_object(key)

    def _delete_object(self, key: str) -> None:
        with translated(f"blob {key}"):
            self._client.delete_object(Bucket=self.bucket, Key=self._object(key))

    def list_keys(self) -> Iterator[str]:
        with translated(f"bucket {self.bucket}"):
            for page in self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.prefix
            ):
                for item in page.get("Contents", ()):
                    yield str(item["Key"])[len(self.prefix) :]

    def incomplete_uploads(self, prefix: str = "") -> Iterator[tuple[str, str]]:
        """(key, upload id) of every multipart upload begun and never completed."""
        with translated(f"bucket {self.bucket}"):
            for page in self._client.get_paginator("list_multipart_uploads").paginate(
                Bucket=self.bucket, Prefix=self.prefix + prefix
            ):
                for upload in page.get("Uploads", ()):
                    yield str(upload["Key"])[len(self.prefix) :], str(upload["UploadId"])

    def incomplete_writes(self) -> Iterator[str]:
        for key, _ in self.incomplete_uploads():
            yield key

    def abort_incomplete_uploads(self, prefix: str = "") -> int:
        """Abort every upload that never completed; how many were."""
        aborted = 0
        for key, upload_id in list(self.incomplete_uploads(prefix)):
            with translated(f"upload of {key}"), contextlib.suppress(NotFound):
                self._client.abort_multipart_upload(
                    Bucket=self.bucket, Key=self._object(key), UploadId=upload_id
                )
                aborted += 1
        return aborted

    # signing
    def presign_get(
        self, key: str, lifetime: timedelta, *, content_type: str, content_disposition: str
    ) -> str:
        """A GET URL signed locally (no request): the response headers are
        fixed in the signature, so whoever holds the URL cannot change them."""
        with translated(f"blob {key}"):
            return str(
                self._client.generate_presigned_url(
                    "get_object",
                    Params={
                        "Bucket": self.bucket,
                        "Key": self._object(key),
                        "ResponseContentType": content_type,
                        "ResponseContentDisposition": content_disposition,
                    },
                    ExpiresIn=int(lifetime.total_seconds()),
                )
            )


def _parts(pieces: Iterable[bytes], size: int) -> Iterator[bytes]:
    """Re-cut a stream of pieces into parts of `size` bytes (the last shorter),
    each joined once from the pieces it holds."""
    held: list[bytes] = []
    length = 0
    for piece in pieces:
        while piece:
            take = piece[: size - length]
            piece = piece[len(take) :]
            held.append(take)
            length += len(take)
            if length == size:
                yield b"".join(held)
                held, length = [], 0
    if held:
        yield b"".join(held)


def _drain(head: list[bytes], rest: Iterator[bytes]) -> Iterator[bytes]:
    """The parts in `head` (released as they are handed out), then the rest."""
    while head:
        yield head.pop(0)
    yield from rest
