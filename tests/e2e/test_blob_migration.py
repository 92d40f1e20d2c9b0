"""`groundwork blobs migrate --to s3`: a filesystem store copied into a real
S3 bucket (SeaweedFS), streamed and SHA-256-verified; a second pass copies
nothing; a pass interrupted half way is finished by the next one; corrupted
source bytes never land."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundwork.blob_migration import migrate_blobs
from groundwork.errors import EngineUnavailable
from groundwork.stages.registration import blob_key_for
from groundwork_cli.main import main
from resources.blobs.filesystem import FilesystemBlobStore
from resources.blobs.s3 import S3BlobStore
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from tests.conftest import TEST_S3_BUCKET


def _filled(root: Path, sizes: list[int]) -> tuple[FilesystemBlobStore, dict[str, bytes]]:
    store = FilesystemBlobStore(root)
    payloads = {}
    for size in sizes:
        data = os.urandom(size)
        key = blob_key_for(hashlib.sha256(data).hexdigest())
        store.put(key, data)
        payloads[key] = data
    return store, payloads


def _bucket(seaweedfs: EmbeddedSeaweedFS) -> S3BlobStore:
    return S3BlobStore(
        seaweedfs.client(), TEST_S3_BUCKET, prefix=f"migration-{uuid.uuid4().hex[:8]}"
    )


class FailingHalfWay(FilesystemBlobStore):
    """The source folder, whose read of one key breaks off half way (a disk
    or network error during the copy)."""

    def __init__(self, root: Path, broken: str) -> None:
        super().__init__(root)
        self.broken = broken

    def read_chunks(
        self, key: str, chunk_size: int = 0, *, offset: int = 0, length: int | None = None
    ) -> Iterator[bytes]:
        pieces = super().read_chunks(key, chunk_size, offset=offset, length=length)
        if key != self.broken:
            yield from pieces
            return
        yield next(iter(pieces))
        raise EngineUnavailable("the source stopped answering half way")


def test_migration_copies_verifies_and_a_second_pass_copies_nothing(
    tmp_path: Path, seaweedfs: EmbeddedSeaweedFS
) -> None:
    source, payloads = _filled(tmp_path / "blobs", [0, 10, 300_000, 19 * 1024 * 1024 + 7])
    target = _bucket(seaweedfs)
    seen: list[str] = []
    first = migrate_blobs(source, target, on_key=lambda key, _size: seen.append(key))
    assert first.complete and first.copied == 4 and first.skipped == 0
    assert first.bytes_copied == sum(len(p) for p in payloads.values())
    assert sorted(seen) == sorted(payloads)
    assert sorted(target.list_keys()) == sorted(payloads)
    for key, data in payloads.items():
        assert hashlib.sha256(b"".join(target.read_chunks(key))).digest() == (
            hashlib.sha256(data).digest()
        )
    again = migrate_blobs(source, target, verify_existing=True)
    assert again.complete and again.copied == 0 and again.skipped == 4


def test_an_interrupted_pass_is_finished_by_the_next(
    tmp_path: Path, seaweedfs: EmbeddedSeaweedFS
) -> None:
    _, payloads = _filled(tmp_path / "blobs", [5_000, 12 * 1024 * 1024, 7_000])
    broken = max(payloads, key=lambda k: len(payloads[k]))
    target = _bucket(seaweedfs)
    first = migrate_blobs(FailingHalfWay(tmp_path / "blobs", broken), target)
    assert list(first.failed) == [broken] and first.copied == 2
    assert not target.exists(broken) and list(target.incomplete_uploads()) == []
    second = migrate_blobs(FilesystemBlobStore(tmp_path / "blobs"), target)
    assert second.complete and second.copied == 1 and second.skipped == 2
    assert target.get(broken) == payloads[broken]


def test_corrupted_source_bytes_never_land(tmp_path: Path, seaweedfs: EmbeddedSeaweedFS) -> None:
    source, payloads = _filled(tmp_path / "blobs", [1_000, 9 * 1024 * 1024])
    for key in payloads:
        path = tmp_path / "blobs" / key
        path.write_bytes(b"X" + path.read_bytes()[1:])  # bit rot on the old disk
    target = _bucket(seaweedfs)
    report = migrate_blobs(source, target)
    assert sorted(report.failed) == sorted(payloads) and report.copied == 0
    assert list(target.list_keys()) == [] and list(target.incomplete_uploads()) == []


def test_the_cli_migrates_the_home_into_the_configured_bucket(
    tmp_path: Path, seaweedfs: EmbeddedSeaweedFS, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    _, payloads = _filled(home / "blobs", [100, 2_000])
    prefix = f"cli-{uuid.uuid4().hex[:8]}"
    for name, value in {
        "GROUNDWORK_HOME": str(home),
        "GROUNDWORK_S3_ENDPOINT": seaweedfs.endpoint,
        "GROUNDWORK_S3_BUCKET": TEST_S3_BUCKET,
        "GROUNDWORK_S3_PREFIX": prefix,
        "GROUNDWORK_S3_ACCESS_KEY_ID": seaweedfs.credentials.access_key_id,
        "GROUNDWORK_S3_SECRET_ACCESS_KEY": seaweedfs.credentials.secret_access_key,
    }.items():
        monkeypatch.setenv(name, value)
    assert main(["blobs", "migrate", "--to", "s3"]) == 0
    target = S3BlobStore(seaweedfs.client(), TEST_S3_BUCKET, prefix=prefix)
    assert sorted(target.list_keys()) == sorted(payloads)
    assert main(["blobs", "migrate", "--to", "s3", "--verify"]) == 0  # resumable: a no-op
