"""/v1/sources/{id}/reference: with the bytes in S3 it hands out a presigned
GET of the store, clamped by the service to 15 minutes whatever the caller
asks, with Content-Type and Content-Disposition fixed by us; with the bytes on
the filesystem (which cannot sign) it keeps the HMAC reference proxied
through the API. Both on real engines (SeaweedFS for S3)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from groundwork.lifecycle import purge_deleted
from groundwork.stages.registration import register_file
from resources.composition.platform import Platform
from retrieval_api.app import create_app

NAME = "résumé <draft>.html"
BODY = b"<html><script>alert(1)</script>a page</html>"


def _source(platform: Platform) -> tuple[TestClient, dict[str, str], str, str]:
    tenant = f"p-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "reader")
    data = BODY + uuid.uuid4().hex.encode()
    registered = register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant,
        origin="api:page.html",
        filename=NAME,
        data=data,
        subjects=[f"tenant:{tenant}"],
        media_type="text/html",
    )
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    return client, {"Authorization": f"Bearer {key}"}, registered.source_id, tenant


def test_s3_hands_out_a_presigned_url_clamped_with_our_headers(s3_platform: Platform) -> None:
    client, headers, source_id, _ = _source(s3_platform)
    asked = datetime.now(UTC)
    answer = client.post(
        f"/v1/sources/{source_id}/reference", params={"ttl_seconds": 10**9}, headers=headers
    )
    assert answer.status_code == 200, answer.text
    made = answer.json()
    url = made["url"]
    assert url.startswith(s3_platform.settings.s3_endpoint or "?")  # the store's, not the API's
    answered = datetime.now(UTC)
    query = parse_qs(urlsplit(url).query)
    lifetime = int(query["X-Amz-Expires"][0])
    assert lifetime == 900  # the caller asked for 31 years
    signed_at = datetime.strptime(query["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    assert asked - timedelta(seconds=1) <= signed_at <= answered
    # the expiry we announce is never later than the store's own
    expires_at = datetime.fromisoformat(made["expires_at"])
    store_expiry = signed_at + timedelta(seconds=lifetime)
    assert store_expiry - timedelta(seconds=2) <= expires_at <= store_expiry
    assert "sha256" not in made["expires_at"]
    with urllib.request.urlopen(url, timeout=10) as read:
        body = read.read()
        assert body.startswith(BODY)
        assert read.headers["Content-Type"] == "text/html"
        disposition = read.headers["Content-Disposition"]
    # always an attachment, never rendered on the store's origin; RFC 5987 name
    assert disposition.startswith("attachment;")
    assert "filename*=UTF-8''r%C3%A9sum%C3%A9%20%3Cdraft%3E.html" in disposition
    # a holder cannot swap the headers: they are part of the signature
    forged = url.replace("attachment", "inline")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(forged, timeout=10)
    assert refused.value.code == 403


def test_a_presigned_url_outlives_deletion_until_the_object_is_swept(
    s3_platform: Platform,
) -> None:
    """The revocation caveat, measured: deleting the source does not revoke a
    URL already handed out; the sweep deleting the object does."""
    client, headers, source_id, tenant = _source(s3_platform)
    url = client.post(f"/v1/sources/{source_id}/reference", headers=headers).json()["url"]
    assert client.delete(f"/v1/sources/{source_id}", headers=headers).status_code == 202
    with urllib.request.urlopen(url, timeout=10) as read:
        assert read.status == 200  # still readable: nothing can revoke a signature
    # ... and no new link is handed out for the deleted source
    again = client.post(f"/v1/sources/{source_id}/reference", headers=headers)
    assert again.status_code == 404
    purge_deleted(s3_platform.catalog, s3_platform.indexes(), s3_platform.blobs, tenant)
    with pytest.raises(urllib.error.HTTPError) as gone:
        urllib.request.urlopen(url, timeout=10)
    assert gone.value.code == 404


def test_a_short_ask_expires_at_the_store(s3_platform: Platform) -> None:
    client, headers, source_id, _ = _source(s3_platform)
    url = client.post(
        f"/v1/sources/{source_id}/reference", params={"ttl_seconds": 1}, headers=headers
    ).json()["url"]
    time.sleep(2.5)
    with pytest.raises(urllib.error.HTTPError) as expired:
        urllib.request.urlopen(url, timeout=10)
    assert expired.value.code == 403


def test_the_filesystem_keeps_the_proxied_hmac_reference(platform: Platform) -> None:
    client, headers, source_id, _ = _source(platform)
    made = client.post(
        f"/v1/sources/{source_id}/reference", params={"ttl_seconds": 10**9}, headers=headers
    ).json()
    assert made["url"].startswith("/v1/files/")
    read = client.get(made["url"])
    assert read.status_code == 200 and read.content.startswith(BODY)
    assert read.headers["content-disposition"].startswith("attachment;")
