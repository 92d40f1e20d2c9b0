"""BlobStore conformance: the contract in groundwork.ports.BlobStore, run
against every adapter (the filesystem folder, the S3 adapter on a real
SeaweedFS server, and the in-memory fake)."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from groundwork.errors import EngineUnavailable, NotFound, StoreError
from groundwork.ports import BlobStore
from groundwork.stages.registration import blob_key_for

MIB = 1024 * 1024


class Interrupted(Exception):
    """What the source of an interrupted put raises half way."""


def _half_then_fail(payload: bytes) -> Iterator[bytes]:
    half = len(payload) // 2
    for start in range(0, half, MIB):
        yield payload[start : min(start + MIB, half)]
    raise Interrupted("the source went away half way")


class BlobStoreContract:
    @pytest.fixture
    def store(self, tmp_path: Path) -> BlobStore:
        raise NotImplementedError

    def test_is_the_port(self, store: BlobStore) -> None:
        assert isinstance(store, BlobStore)

    def test_put_then_get_returns_the_bytes(self, store: BlobStore) -> None:
        store.put("ab/cd/one", b"hello")
        assert store.get("ab/cd/one") == b"hello"
        assert store.exists("ab/cd/one")

    def test_an_empty_blob_is_a_blob(self, store: BlobStore) -> None:
        store.put("k/empty", b"")
        assert store.exists("k/empty") and store.get("k/empty") == b""
        assert list(store.read_chunks("k/empty")) in ([], [b""])

    def test_put_of_an_existing_key_is_a_no_op(self, store: BlobStore) -> None:
        store.put("k/same", b"first")
        store.put("k/same", b"first")
        assert list(store.list_keys()).count("k/same") == 1
        assert store.get("k/same") == b"first"

    def test_re_put_of_a_large_file_is_idempotent(self, store: BlobStore, tmp_path: Path) -> None:
        source = tmp_path / "again.bin"
        payload = os.urandom(9 * MIB + 5)
        source.write_bytes(payload)
        key = blob_key_for(hashlib.sha256(payload).hexdigest())
        store.put_file(key, source)
        store.put_file(key, source)
        store.put_stream(key, [payload])
        assert list(store.list_keys()).count(key) == 1
        assert store.get(key) == payload

    def test_put_file_streams_a_file_in(self, store: BlobStore, tmp_path: Path) -> None:
        source = tmp_path / "big.bin"
        payload = os.urandom(3 * MIB + 17)
        source.write_bytes(payload)
        store.put_file("k/big", source)
        assert store.get("k/big") == payload
        pieces = list(store.read_chunks("k/big", MIB))
        assert len(pieces) == 4 and b"".join(pieces) == payload

    def test_put_stream_over_several_parts(self, store: BlobStore) -> None:
        """More than one S3 part (8 MiB), cut at odd piece sizes."""
        payload = os.urandom(17 * MIB + 3)
        key = blob_key_for(hashlib.sha256(payload).hexdigest())
        store.put_stream(key, (payload[i : i + 777_777] for i in range(0, len(payload), 777_777)))
        assert hashlib.sha256(b"".join(store.read_chunks(key))).digest() == (
            hashlib.sha256(payload).digest()
        )

    def test_ranged_reads(self, store: BlobStore) -> None:
        payload = bytes(range(256)) * 4096  # 1 MiB, every offset recognisable
        store.put("k/ranged", payload)
        assert b"".join(store.read_chunks("k/ranged", offset=10, length=20)) == payload[10:30]
        assert b"".join(store.read_chunks("k/ranged", offset=len(payload) - 5)) == payload[-5:]
        # clipped at the end, nothing past it, nothing for a zero length
        assert (
            b"".join(store.read_chunks("k/ranged", offset=len(payload) - 3, length=10))
            == (payload[-3:])
        )
        assert b"".join(store.read_chunks("k/ranged", offset=len(payload) + 100)) == b""
        assert b"".join(store.read_chunks("k/ranged", offset=5, length=0)) == b""
        pieces = list(store.read_chunks("k/ranged", 4096, offset=100, length=10_000))
        assert b"".join(pieces) == payload[100:10_100] and len(pieces) == 3
        with pytest.raises(ValueError):
            next(iter(store.read_chunks("k/ranged", offset=-1)))

    def test_missing_key_is_not_found(self, store: BlobStore) -> None:
        with pytest.raises(NotFound):
            store.get("k/none")
        with pytest.raises(NotFound):
            next(iter(store.read_chunks("k/none")))
        with pytest.raises(NotFound):
            next(iter(store.read_chunks("k/none", offset=3, length=4)))
        assert not store.exists("k/none")

    def test_a_put_interrupted_half_way_leaves_no_readable_object(self, store: BlobStore) -> None:
        payload = os.urandom(20 * MIB)  # past the first part of a multipart upload
        key = blob_key_for(hashlib.sha256(payload).hexdigest())
        with pytest.raises(Interrupted):
            store.put_stream(key, _half_then_fail(payload))
        assert not store.exists(key)
        assert key not in set(store.list_keys())
        with pytest.raises(NotFound):
            store.get(key)

    def test_an_interrupted_put_keeps_the_object_already_there(self, store: BlobStore) -> None:
        store.put("k/kept", b"the first bytes")
        with pytest.raises(Interrupted):
            store.put_stream("k/kept", _half_then_fail(os.urandom(2 * MIB)))
        assert store.get("k/kept") == b"the first bytes"

    def test_delete_removes_and_is_idempotent(self, store: BlobStore) -> None:
        store.put("k/gone", b"x")
        store.delete("k/gone")
        store.delete("k/gone")
        assert not store.exists("k/gone")
        assert "k/gone" not in set(store.list_keys())

    def test_list_keys_lists_every_stored_key(self, store: BlobStore) -> None:
        for key in ("a/1", "a/2", "b/3"):
            store.put(key, key.encode())
        assert {"a/1", "a/2", "b/3"} <= set(store.list_keys())

    def test_list_keys_goes_past_a_page(self, store: BlobStore) -> None:
        """S3 answers 1,000 keys a page: 1,001 must all come back, once each."""
        from concurrent.futures import ThreadPoolExecutor

        keys = [f"many/{n:05d}" for n in range(1001)]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda key: store.put(key, b"x"), keys))
        listed = [k for k in store.list_keys() if k.startswith("many/")]
        assert sorted(listed) == keys

    def test_invalid_keys_are_refused(self, store: BlobStore) -> None:
        for key in ("../outside", "a/../../b", "", "/absolute"):
            with pytest.raises((StoreError, NotFound)):
                store.put(key, b"x")

    def test_presign_is_a_url_or_none(self, store: BlobStore) -> None:
        store.put("k/signed", b"bytes")
        url = store.presign_get(
            "k/signed",
            timedelta(minutes=1),
            content_type="text/plain",
            content_disposition="attachment; filename=\"a.txt\"; filename*=UTF-8''a.txt",
        )
        assert url is None or url.startswith(("http://", "https://"))


class TestFilesystemBlobStore(BlobStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> BlobStore:
        from resources.blobs.filesystem import FilesystemBlobStore

        return FilesystemBlobStore(tmp_path / "blobs")

    def test_a_folder_cannot_sign(self, store: BlobStore) -> None:
        store.put("k/x", b"x")
        assert (
            store.presign_get("k/x", timedelta(minutes=1), content_type="", content_disposition="")
            is None
        )


class TestInMemoryBlobStore(BlobStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> BlobStore:
        from tests.fakes import InMemoryBlobStore

        return InMemoryBlobStore()


class TestS3BlobStore(BlobStoreContract):
    """On a real SeaweedFS server; each test keeps to a folder of its own."""

    @pytest.fixture
    def store(self, seaweedfs: object) -> BlobStore:
        from resources.blobs.s3 import S3BlobStore
        from tests.conftest import TEST_S3_BUCKET

        client = seaweedfs.client()  # type: ignore[attr-defined]
        return S3BlobStore(client, TEST_S3_BUCKET, prefix=f"conformance-{uuid.uuid4().hex[:10]}")

    def test_an_interrupted_put_leaves_no_upload_behind(self, store: BlobStore) -> None:
        payload = os.urandom(20 * MIB)
        key = blob_key_for(hashlib.sha256(payload).hexdigest())
        with pytest.raises(Interrupted):
            store.put_stream(key, _half_then_fail(payload))
        assert list(store.incomplete_uploads()) == []  # type: ignore[attr-defined]

    def test_delete_aborts_an_upload_that_never_completed(self, store: BlobStore) -> None:
        """A process killed mid-upload leaves parts no object listing shows:
        deleting the key (erasure, the deletion sweep) removes them too."""
        client, bucket = store._client, store.bucket  # type: ignore[attr-defined]
        name = store.prefix + "k/abandoned"  # type: ignore[attr-defined]
        upload = client.create_multipart_upload(Bucket=bucket, Key=name)["UploadId"]
        client.upload_part(Bucket=bucket, Key=name, UploadId=upload, PartNumber=1, Body=b"x" * MIB)
        assert [k for k, _ in store.incomplete_uploads()] == ["k/abandoned"]  # type: ignore[attr-defined]
        store.delete("k/abandoned")
        assert list(store.incomplete_uploads()) == []  # type: ignore[attr-defined]

    def test_bytes_that_are_not_the_content_key_never_land(self, store: BlobStore) -> None:
        small, large = b"not what the key names", os.urandom(9 * MIB)
        for payload in (small, large):
            wrong = blob_key_for(hashlib.sha256(payload + b"!").hexdigest())
            with pytest.raises(StoreError):
                store.put(wrong, payload)
            assert not store.exists(wrong)
        assert list(store.incomplete_uploads()) == []  # type: ignore[attr-defined]

    def test_a_corrupted_part_is_refused_by_the_server(self, store: BlobStore) -> None:
        """The server checks each part's SHA-256: a part whose bytes differ
        from the checksum sent with it is refused (BadDigest -> StoreError)."""
        client, bucket = store._client, store.bucket  # type: ignore[attr-defined]
        import base64

        from resources.blobs.s3 import translated

        with pytest.raises(StoreError), translated("a corrupted put"):
            client.put_object(
                Bucket=bucket,
                Key=store.prefix + "k/corrupt",  # type: ignore[attr-defined]
                Body=b"bytes on the wire",
                ChecksumSHA256=base64.b64encode(hashlib.sha256(b"other").digest()).decode(),
            )
        assert not store.exists("k/corrupt")

    def test_anonymous_requests_are_refused(self, store: BlobStore) -> None:
        import urllib.error
        import urllib.request

        store.put("k/private", b"secret bytes")
        endpoint = store._client.meta.endpoint_url  # type: ignore[attr-defined]
        url = f"{endpoint}/{store.bucket}/{store.prefix}k/private"  # type: ignore[attr-defined]
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=10)
        assert refused.value.code == 403

    def test_a_presigned_url_reads_with_our_headers_then_expires(self, store: BlobStore) -> None:
        import time
        import urllib.error
        import urllib.request

        store.put("k/report", b"%PDF-1.4 report")
        disposition = "attachment; filename=\"r_sum_.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf"
        url = store.presign_get(
            "k/report",
            timedelta(seconds=2),
            content_type="application/pdf",
            content_disposition=disposition,
        )
        assert url is not None
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert answer.read() == b"%PDF-1.4 report"
            assert answer.headers["Content-Type"] == "application/pdf"
            assert answer.headers["Content-Disposition"] == disposition
        # the headers are part of the signature: a holder cannot change them
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(url.replace("application%2Fpdf", "text%2Fhtml"), timeout=10)
        time.sleep(3.5)
        with pytest.raises(urllib.error.HTTPError) as expired:
            urllib.request.urlopen(url, timeout=10)
        assert expired.value.code == 403

    def test_credentials_are_not_in_its_repr(self, store: BlobStore, seaweedfs: object) -> None:
        secret = seaweedfs.credentials.secret_access_key  # type: ignore[attr-defined]
        assert secret not in repr(store) and secret not in repr(seaweedfs.credentials)  # type: ignore[attr-defined]


class TestMigratingBlobStore(BlobStoreContract):
    """The S3 store with reads falling back to a folder (mid-migration)."""

    @pytest.fixture
    def store(self, seaweedfs: object, tmp_path: Path) -> BlobStore:
        from resources.blobs.filesystem import FilesystemBlobStore
        from resources.blobs.migrating import MigratingBlobStore
        from resources.blobs.s3 import S3BlobStore
        from tests.conftest import TEST_S3_BUCKET

        client = seaweedfs.client()  # type: ignore[attr-defined]
        new = S3BlobStore(client, TEST_S3_BUCKET, prefix=f"migrating-{uuid.uuid4().hex[:10]}")
        return MigratingBlobStore(new, FilesystemBlobStore(tmp_path / "old"))

    def test_a_key_only_in_the_old_store_is_read_there_and_deleted_from_both(
        self, store: BlobStore
    ) -> None:
        old = store.old  # type: ignore[attr-defined]
        old.put("k/old", b"written before the switch")
        assert store.exists("k/old") and store.get("k/old") == b"written before the switch"
        assert b"".join(store.read_chunks("k/old", offset=8)) == b"before the switch"
        assert "k/old" in set(store.list_keys())
        # the folder cannot sign: the read of such a key is proxied
        assert (
            store.presign_get(
                "k/old", timedelta(minutes=1), content_type="", content_disposition=""
            )
            is None
        )
        store.put("k/old", b"written before the switch")  # a re-put lands in the new store
        assert store.new.exists("k/old")  # type: ignore[attr-defined]
        store.delete("k/old")
        assert not old.exists("k/old") and not store.exists("k/old")


class _PartTwoFails:
    """Mixin: the second part of every multipart upload fails on the wire."""

    def _send_part(self, key: str, upload_id: str, number: int, body: bytes, digest: bytes):  # type: ignore[no-untyped-def]
        if number == 2:
            raise EngineUnavailable("the connection dropped during part 2")
        return super()._send_part(key, upload_id, number, body, digest)  # type: ignore[misc]


def test_a_part_lost_on_the_wire_aborts_the_whole_upload(seaweedfs: object) -> None:
    """Parts go out two at a time: one failing leaves no object and no upload."""
    from resources.blobs.s3 import S3BlobStore
    from tests.conftest import TEST_S3_BUCKET

    class Flaky(_PartTwoFails, S3BlobStore):
        pass

    client = seaweedfs.client()  # type: ignore[attr-defined]
    store = Flaky(client, TEST_S3_BUCKET, prefix=f"flaky-{uuid.uuid4().hex[:10]}")
    payload = os.urandom(20 * MIB)
    key = blob_key_for(hashlib.sha256(payload).hexdigest())
    with pytest.raises(EngineUnavailable):
        store.put_stream(key, [payload])
    assert not store.exists(key) and list(store.incomplete_uploads()) == []


def test_an_unreachable_store_is_engine_unavailable_not_a_botocore_error() -> None:
    """Nothing above the adapter sees botocore: a closed port is EngineUnavailable."""
    import socket

    from resources.blobs.s3 import S3BlobStore, S3Credentials, s3_client

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = s3_client(
        f"http://127.0.0.1:{port}", "us-east-1", S3Credentials("a", "b"), path_style=True
    )
    store = S3BlobStore(client, "nowhere")
    for call in (
        lambda: store.get("k/x"),
        lambda: store.put("k/x", b"x"),
        lambda: list(store.list_keys()),
        lambda: store.exists("k/x"),
    ):
        with pytest.raises(EngineUnavailable):
            call()
