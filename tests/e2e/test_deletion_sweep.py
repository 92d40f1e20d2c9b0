"""The deletion sweep removes bytes before rows, and one object that cannot be
deleted is that source's problem: it is reported, its source stays marked
(the next sweep retries it), and every other source is purged. Run with the
bytes on the filesystem and in S3 (a real SeaweedFS)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from groundwork.errors import EngineUnavailable
from groundwork.lifecycle import purge_deleted, request_deletion
from groundwork.ports import BlobStore
from groundwork.stages.registration import blob_key_for, register_file
from resources.composition.platform import Platform


class RefusingDeletes:
    """A BlobStore whose deletes of some keys fail as an unreachable store's
    do (every other call goes to the real store underneath)."""

    def __init__(self, inner: BlobStore, refused: set[str]) -> None:
        self.inner = inner
        self.refused = refused
        self.attempts: dict[str, int] = {}

    def delete(self, key: str) -> None:
        self.attempts[key] = self.attempts.get(key, 0) + 1
        if key in self.refused:
            raise EngineUnavailable(f"object storage cannot be reached to delete {key}")
        self.inner.delete(key)

    def put(self, key: str, data: bytes) -> None:
        self.inner.put(key, data)

    def put_file(self, key: str, source: Path) -> None:
        self.inner.put_file(key, source)

    def put_stream(self, key: str, pieces: Iterable[bytes]) -> None:
        self.inner.put_stream(key, pieces)

    def get(self, key: str) -> bytes:
        return self.inner.get(key)

    def read_chunks(
        self, key: str, chunk_size: int = 0, *, offset: int = 0, length: int | None = None
    ) -> Iterator[bytes]:
        return self.inner.read_chunks(key, chunk_size, offset=offset, length=length)

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def list_keys(self) -> Iterator[str]:
        return self.inner.list_keys()

    def incomplete_writes(self) -> Iterator[str]:
        return self.inner.incomplete_writes()

    def presign_get(
        self, key: str, lifetime: timedelta, *, content_type: str, content_disposition: str
    ) -> str | None:
        return None


@pytest.fixture(params=["filesystem", "s3"])
def store_platform(request: pytest.FixtureRequest) -> Platform:
    return request.getfixturevalue("platform" if request.param == "filesystem" else "s3_platform")


def _register(platform: Platform, tenant: str, name: str) -> tuple[str, str]:
    data = f"{name} {uuid.uuid4().hex}".encode()
    registered = register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant,
        origin=f"api:{name}",
        filename=name,
        data=data,
        subjects=[f"tenant:{tenant}"],
        media_type="text/plain",
    )
    return registered.source_id, blob_key_for(hashlib.sha256(data).hexdigest())


def test_a_failing_object_delete_is_reported_retried_and_spares_the_others(
    store_platform: Platform,
) -> None:
    platform = store_platform
    tenant = f"w-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    stuck_source, stuck_key = _register(platform, tenant, "stuck.txt")
    fine_source, fine_key = _register(platform, tenant, "fine.txt")
    for source in (stuck_source, fine_source):
        request_deletion(platform.catalog, platform.indexes(), tenant, source)

    failing = RefusingDeletes(platform.blobs, {stuck_key})
    report = purge_deleted(platform.catalog, platform.indexes(), failing, tenant)

    # the other source is purged in the same sweep, its object gone
    assert report.sources == 1 and not platform.blobs.exists(fine_key)
    # the stuck one is reported with its key and reason, after more than one try ...
    assert [(f.source_id, f.blob_key) for f in report.failures] == [(stuck_source, stuck_key)]
    assert "cannot be reached" in report.failures[0].reason
    assert failing.attempts[stuck_key] > 1
    # ... and stays marked with its bytes, so the next sweep retries it
    assert platform.blobs.exists(stuck_key)
    assert (tenant, stuck_source) in platform.catalog.sources_marked_for_deletion(tenant)

    again = purge_deleted(platform.catalog, platform.indexes(), platform.blobs, tenant)
    assert again.sources == 1 and again.failures == []
    assert not platform.blobs.exists(stuck_key)
    assert platform.catalog.sources_marked_for_deletion(tenant) == []
