"""UploadStaging conformance: the contract in groundwork.upload_staging, run
against the folder adapter and the S3 adapter on a real SeaweedFS server
(where every part goes on to the bucket as it arrives)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tracemalloc
import uuid
import zipfile
from collections.abc import Iterator
from datetime import timedelta
from io import BytesIO
from pathlib import Path

import pytest

from groundwork.errors import NotFound
from groundwork.ports import BlobStore
from groundwork.stages.registration import blob_key_for
from groundwork.upload_staging import StagedTooLarge, UploadStaging

MIB = 1024 * 1024


class Interrupted(Exception):
    pass


def _pieces(data: bytes, piece: int = 256 * 1024) -> Iterator[bytes]:
    for start in range(0, len(data), piece):
        yield data[start : start + piece]


def _fail_after(data: bytes, good: int) -> Iterator[bytes]:
    yield from _pieces(data[:good])
    raise Interrupted("the client went away")


def _session() -> str:
    return f"upl_{uuid.uuid4().hex}"


class UploadStagingContract:
    TENANT = "staging-tenant"

    @pytest.fixture
    def blobs(self, tmp_path: Path) -> BlobStore:
        raise NotImplementedError

    @pytest.fixture
    def staging(self, blobs: BlobStore, tmp_path: Path) -> UploadStaging:
        raise NotImplementedError

    def fresh(self, staging: UploadStaging) -> UploadStaging:
        """The same staging as another API process sees it (no shared memory)."""
        raise NotImplementedError

    def _send(
        self,
        staging: UploadStaging,
        upload: str,
        data: bytes,
        cuts: list[int],
        upto: int | None = None,
        *,
        declared: bool = False,
    ) -> None:
        """`data` in requests ending at `cuts` (and `upto`, or the end), each
        acknowledged; `declared`: each says its length (a Content-Length)."""
        offset = 0
        for end in [*cuts, len(data) if upto is None else upto]:
            written = staging.write(
                self.TENANT,
                upload,
                offset,
                _pieces(data[offset:end]),
                room=len(data) - offset,
                length=end - offset if declared else None,
            )
            assert written == end - offset
            offset = end
            staging.acknowledged(self.TENANT, upload, offset)

    def test_is_the_port(self, staging: UploadStaging) -> None:
        assert isinstance(staging, UploadStaging)

    @pytest.mark.parametrize(
        "cuts",
        [
            [],  # one request
            [8 * MIB, 16 * MIB],  # the bench's 8 MiB parts
            [1 * MIB, 2 * MIB, 3 * MIB + 7, 9 * MIB, 10 * MIB + 1],  # small requests: tails
            [12 * MIB + 3],  # one request longer than two parts
        ],
    )
    @pytest.mark.parametrize("declared", [False, True], ids=["unknown-length", "content-length"])
    def test_parts_seal_to_the_bytes_and_their_sha256(
        self, staging: UploadStaging, blobs: BlobStore, cuts: list[int], declared: bool
    ) -> None:
        data = os.urandom(17 * MIB + 11)
        upload = _session()
        staging.begin(self.TENANT, upload)
        self._send(staging, upload, data, cuts, declared=declared)
        sealed = staging.seal(self.TENANT, upload, len(data))
        assert sealed.size == len(data)
        assert sealed.sha256 == hashlib.sha256(data).hexdigest()
        assert staging.seal(self.TENANT, upload, len(data)) == sealed  # again: same answer
        key = blob_key_for(sealed.sha256)
        staging.place(self.TENANT, upload, key)
        assert blobs.get(key) == data
        staging.discard(self.TENANT, upload)
        assert blobs.get(key) == data  # the placed object outlives its staging

    def test_a_zero_byte_upload(self, staging: UploadStaging, blobs: BlobStore) -> None:
        upload = _session()
        staging.begin(self.TENANT, upload)
        assert staging.write(self.TENANT, upload, 0, iter(()), room=0) == 0
        sealed = staging.seal(self.TENANT, upload, 0)
        assert sealed.sha256 == hashlib.sha256(b"").hexdigest()
        staging.place(self.TENANT, upload, "k/empty")
        assert blobs.get("k/empty") == b""

    def test_open_reads_the_sealed_bytes_seekably(self, staging: UploadStaging) -> None:
        """Sniffing reads the head, and a ZIP's central directory at the end."""
        packed = BytesIO()
        with zipfile.ZipFile(packed, "w") as archive:
            archive.writestr("word/document.xml", os.urandom(6 * MIB))
            archive.writestr("[Content_Types].xml", "<Types/>")
        data = packed.getvalue()
        upload = _session()
        staging.begin(self.TENANT, upload)
        self._send(staging, upload, data, [len(data) // 3])
        staging.seal(self.TENANT, upload, len(data))
        with staging.open(self.TENANT, upload) as handle:
            assert handle.read(4) == b"PK\x03\x04"
            assert "[Content_Types].xml" in zipfile.ZipFile(handle).namelist()
            handle.seek(0)
            assert hashlib.sha256(handle.read()).digest() == hashlib.sha256(data).digest()

    def test_a_failed_part_keeps_nothing_and_the_retry_wins(self, staging: UploadStaging) -> None:
        data = os.urandom(14 * MIB + 5)
        upload = _session()
        staging.begin(self.TENANT, upload)
        self._send(staging, upload, data, [], upto=3 * MIB)
        with pytest.raises(Interrupted):
            staging.write(
                self.TENANT, upload, 3 * MIB, _fail_after(data[3 * MIB :], 9 * MIB), room=11 * MIB
            )
        # a write whose acknowledgement lost (another bytes at the same offset won)
        other = os.urandom(len(data) - 3 * MIB)
        staging.write(self.TENANT, upload, 3 * MIB, _pieces(other), room=len(other))
        written = staging.write(
            self.TENANT, upload, 3 * MIB, _pieces(data[3 * MIB :]), room=len(data) - 3 * MIB
        )
        assert written == len(data) - 3 * MIB
        staging.acknowledged(self.TENANT, upload, len(data))
        sealed = staging.seal(self.TENANT, upload, len(data))
        assert sealed.sha256 == hashlib.sha256(data).hexdigest()

    def test_a_part_short_of_its_length_keeps_nothing(self, staging: UploadStaging) -> None:
        """A request that ends before its Content-Length (a client gone, a
        proxy cutting it) is not acknowledged; the retry is what counts."""
        data = os.urandom(12 * MIB)
        upload = _session()
        staging.begin(self.TENANT, upload)
        self._send(staging, upload, data, [], upto=1 * MIB, declared=True)
        # a folder takes what came (the catalog acknowledges it or not); a bucket refuses it
        with contextlib.suppress(Exception):
            staging.write(
                self.TENANT,
                upload,
                MIB,
                _pieces(data[MIB : 7 * MIB]),
                room=11 * MIB,
                length=8 * MIB,
            )
        staging.write(self.TENANT, upload, MIB, _pieces(data[MIB:]), room=11 * MIB, length=11 * MIB)
        staging.acknowledged(self.TENANT, upload, len(data))
        sealed = staging.seal(self.TENANT, upload, len(data))
        assert sealed.sha256 == hashlib.sha256(data).hexdigest()

    def test_past_its_room_a_part_is_refused_and_keeps_nothing(
        self, staging: UploadStaging
    ) -> None:
        data = os.urandom(7 * MIB)
        upload = _session()
        staging.begin(self.TENANT, upload)
        self._send(staging, upload, data, [], upto=2 * MIB)
        with pytest.raises(StagedTooLarge):
            staging.write(self.TENANT, upload, 2 * MIB, _pieces(os.urandom(6 * MIB)), room=5 * MIB)
        staging.write(self.TENANT, upload, 2 * MIB, _pieces(data[2 * MIB :]), room=5 * MIB)
        staging.acknowledged(self.TENANT, upload, len(data))
        assert staging.seal(self.TENANT, upload, len(data)).sha256 == (
            hashlib.sha256(data).hexdigest()
        )

    def test_another_process_continues_and_seals_a_session(self, staging: UploadStaging) -> None:
        """Parts acknowledged by one API process, the rest sent to another."""
        data = os.urandom(13 * MIB + 1)
        upload = _session()
        staging.begin(self.TENANT, upload)
        self._send(staging, upload, data, [2 * MIB], upto=6 * MIB + 9)
        other = self.fresh(staging)
        offset = 6 * MIB + 9
        other.write(self.TENANT, upload, offset, _pieces(data[offset:]), room=len(data) - offset)
        other.acknowledged(self.TENANT, upload, len(data))
        sealed = self.fresh(staging).seal(self.TENANT, upload, len(data))
        assert sealed.sha256 == hashlib.sha256(data).hexdigest()

    def test_a_write_holds_a_few_parts_in_memory_not_the_request(
        self, staging: UploadStaging
    ) -> None:
        size = 64 * MIB
        upload = _session()
        staging.begin(self.TENANT, upload)

        def generated() -> Iterator[bytes]:
            for _ in range(size // MIB):
                yield os.urandom(MIB)

        tracemalloc.start()
        try:
            staging.write(self.TENANT, upload, 0, generated(), room=size)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 32 * MIB, f"a 64 MiB part held {peak / MIB:.1f} MiB at its peak"
        staging.discard(self.TENANT, upload)

    def test_discard_removes_what_a_session_staged(
        self, staging: UploadStaging, blobs: BlobStore
    ) -> None:
        upload = _session()
        staging.begin(self.TENANT, upload)
        self._send(staging, upload, os.urandom(9 * MIB), [3 * MIB + 1, 8 * MIB])
        assert any(upload in item.key for item in staging.staged())
        staging.discard(self.TENANT, upload)
        assert not any(upload in item.key for item in staging.staged())
        assert not any(upload in key for key in blobs.list_keys())
        assert not any(upload in key for key in blobs.incomplete_writes())
        staging.discard(self.TENANT, upload)  # again: nothing to do
        with pytest.raises(NotFound):
            staging.open(self.TENANT, upload)

    def test_discard_tenant_takes_every_session_of_one_tenant(self, staging: UploadStaging) -> None:
        mine = [_session(), _session()]
        theirs = _session()
        for upload in mine:
            staging.begin("erased-tenant", upload)
            staging.write("erased-tenant", upload, 0, _pieces(os.urandom(MIB)), room=2 * MIB)
            staging.acknowledged("erased-tenant", upload, MIB)
        staging.begin("kept-tenant", theirs)
        staging.write("kept-tenant", theirs, 0, _pieces(os.urandom(MIB)), room=2 * MIB)
        staging.acknowledged("kept-tenant", theirs, MIB)
        assert staging.discard_tenant("erased-tenant") == 2
        keys = [item.key for item in staging.staged()]
        assert not any(upload in key for upload in mine for key in keys)
        assert any(theirs in key for key in keys)

    def test_expire_removes_what_is_older_than_the_session_life(
        self, staging: UploadStaging
    ) -> None:
        upload = _session()
        staging.begin(self.TENANT, upload)
        staging.write(self.TENANT, upload, 0, _pieces(os.urandom(MIB)), room=3 * MIB)
        staging.acknowledged(self.TENANT, upload, MIB)
        assert staging.expire(timedelta(hours=24)) == 0
        assert any(upload in item.key for item in staging.staged())
        assert staging.expire(timedelta(seconds=-60)) >= 1
        assert not any(upload in item.key for item in staging.staged())

    def test_ids_that_are_not_ids_are_refused(self, staging: UploadStaging) -> None:
        from groundwork.errors import StoreError

        with pytest.raises(StoreError):
            staging.begin(self.TENANT, "../../etc")
        with pytest.raises(StoreError):
            staging.begin("../x", _session())


class TestFilesystemUploadStaging(UploadStagingContract):
    @pytest.fixture
    def blobs(self, tmp_path: Path) -> BlobStore:
        from resources.blobs.filesystem import FilesystemBlobStore

        return FilesystemBlobStore(tmp_path / "blobs")

    @pytest.fixture
    def staging(self, blobs: BlobStore, tmp_path: Path) -> UploadStaging:
        from resources.blobs.upload_staging import FilesystemUploadStaging

        return FilesystemUploadStaging(tmp_path / "uploads", blobs)

    def fresh(self, staging: UploadStaging) -> UploadStaging:
        from resources.blobs.upload_staging import FilesystemUploadStaging

        assert isinstance(staging, FilesystemUploadStaging)
        return FilesystemUploadStaging(staging.root, staging.blobs)


class TestS3UploadStaging(UploadStagingContract):
    """On a real SeaweedFS server; each test keeps to a folder of its own."""

    @pytest.fixture
    def blobs(self, seaweedfs: object) -> BlobStore:
        from resources.blobs.s3 import S3BlobStore
        from tests.conftest import TEST_S3_BUCKET

        client = seaweedfs.client()  # type: ignore[attr-defined]
        return S3BlobStore(client, TEST_S3_BUCKET, prefix=f"staging-{uuid.uuid4().hex[:10]}")

    @pytest.fixture
    def staging(self, blobs: BlobStore, tmp_path: Path) -> UploadStaging:
        from resources.blobs.s3 import S3BlobStore
        from resources.blobs.s3_staging import S3UploadStaging

        assert isinstance(blobs, S3BlobStore)
        return S3UploadStaging(blobs)

    def fresh(self, staging: UploadStaging) -> UploadStaging:
        from resources.blobs.s3_staging import S3UploadStaging

        assert isinstance(staging, S3UploadStaging)
        return S3UploadStaging(staging.store)

    def test_parts_go_to_the_bucket_as_they_arrive(
        self, staging: UploadStaging, blobs: BlobStore
    ) -> None:
        """Acknowledged bytes are in the bucket (parts of a multipart upload
        under the session's staging key), not on the API's disk."""
        from resources.blobs.s3 import S3BlobStore

        assert isinstance(blobs, S3BlobStore)
        upload = _session()
        staging.begin(self.TENANT, upload)
        staging.write(self.TENANT, upload, 0, _pieces(os.urandom(8 * MIB)), room=20 * MIB)
        staging.acknowledged(self.TENANT, upload, 8 * MIB)
        key = f"uploads/{self.TENANT}/{upload}"
        uploads = [u for k, u in blobs.incomplete_uploads(prefix=key) if k == key]
        assert len(uploads) == 1
        parts = blobs.client.list_parts(
            Bucket=blobs.bucket, Key=blobs.object_name(key), UploadId=uploads[0]
        )["Parts"]
        assert sum(int(p["Size"]) for p in parts) == 8 * MIB
        staging.discard(self.TENANT, upload)
        assert not [u for k, u in blobs.incomplete_uploads(prefix=key)]
