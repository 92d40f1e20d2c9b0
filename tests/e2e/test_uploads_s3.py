"""The upload sessions' tests again with the bytes in a bucket: every part goes
on to SeaweedFS as it arrives (resources/blobs/s3_staging.py), completion
copies it server-side to the content key. Same answers as on the folder."""

from __future__ import annotations

import hashlib
import uuid

import pytest
from fastapi.testclient import TestClient

from groundwork.reconciliation import reconcile
from groundwork.stages.registration import blob_key_for
from resources.composition.platform import Platform
from tests.e2e.test_uploads import *  # noqa: F403 (the same tests, on this module's fixtures)
from tests.e2e.test_uploads import _create

# a bucket signs its references (a URL of the store, tests/e2e/test_presigned_reference.py):
# these two read them back through the API, as the folder's proxied references are
del test_signed_references_read_until_deleted_and_refuse_forgeries  # noqa: F821
del test_replacing_content_needs_approval_and_keeps_the_previous_version_readable  # noqa: F821


@pytest.fixture(scope="module")
def platform(s3_platform: Platform) -> Platform:
    """The `client` and `headers` fixtures imported above build on this one."""
    return s3_platform


def _staged_keys(platform: Platform, upload: str) -> list[str]:
    return [item.key for item in platform.upload_staging().staged() if upload in item.key]


def test_parts_are_in_the_bucket_before_completion_and_gone_after(
    client: TestClient, headers: dict[str, str], platform: Platform
) -> None:
    data = b"Staged straight into the bucket.\n" * 400_000  # 13 MB: several parts
    created = _create(client, headers, "staged.txt", len(data))
    upload = created["upload_id"]
    for start in range(0, len(data), 6 * 1024 * 1024 + 5):
        end = min(len(data), start + 6 * 1024 * 1024 + 5)
        sent = client.put(
            f"/v1/uploads/{upload}",
            params={"offset": start},
            content=data[start:end],
            headers=headers,
        )
        assert sent.status_code == 200, sent.text
    staged = _staged_keys(platform, upload)
    assert staged and all(key.startswith("uploads/") for key in staged)
    # reconciliation reports the open session's bytes as staged, not as orphans
    report = reconcile(platform.catalog, platform.blobs, platform.upload_staging())
    kinds = {f.kind for f in report.findings if upload in f.blob_key}
    assert kinds == {"staged-upload"}
    done = client.post(f"/v1/uploads/{upload}/complete", headers=headers)
    assert done.json()["state"] == "completed", done.text
    key = blob_key_for(hashlib.sha256(data).hexdigest())
    assert platform.blobs.get(key) == data
    assert _staged_keys(platform, upload) == []


def test_an_erased_tenant_leaves_no_staged_upload(platform: Platform, client: TestClient) -> None:
    from groundwork.lifecycle import erase_tenant

    tenant = f"erase-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "uploader")
    auth = {"Authorization": f"Bearer {key}"}
    upload = _create(client, auth, "never.txt", 9 * 1024 * 1024)["upload_id"]
    part = b"x" * (7 * 1024 * 1024)
    assert (
        client.put(
            f"/v1/uploads/{upload}", params={"offset": 0}, content=part, headers=auth
        ).status_code
        == 200
    )
    assert _staged_keys(platform, upload)
    erase_tenant(
        platform.catalog,
        platform.indexes(),
        platform.blobs,
        tenant,
        staging=platform.upload_staging(),
    )
    assert _staged_keys(platform, upload) == []
    assert not [k for k in platform.blobs.incomplete_writes() if upload in k]
    assert not [k for k in platform.blobs.list_keys() if upload in k]
