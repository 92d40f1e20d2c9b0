"""Upload sessions over HTTP: every refusal, resume after an interruption."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from resources.composition.platform import Platform
from retrieval_api.app import create_app
from testbed import documents as make


@pytest.fixture(scope="module")
def client(platform: Platform) -> TestClient:
    return TestClient(create_app(lambda: platform), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def headers(platform: Platform) -> dict[str, str]:
    tenant = f"u-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "uploader")
    return {"Authorization": f"Bearer {key}"}


def _create(client: TestClient, headers: dict[str, str], filename: str, size: int) -> dict:
    response = client.post(
        "/v1/uploads", json={"filename": filename, "size": size}, headers=headers
    )
    return {"status": response.status_code, **response.json()}


def test_a_pdf_uploads_in_parts_resumes_and_registers(
    client: TestClient, headers: dict[str, str]
) -> None:
    data = make.report_pdf()
    created = _create(client, headers, "review.pdf", len(data))
    assert created["status"] == 201 and created["received"] == 0
    upload = created["upload_id"]
    first = client.put(
        f"/v1/uploads/{upload}", params={"offset": 0}, content=data[:1000], headers=headers
    )
    assert first.json()["received"] == 1000
    # the client "crashed"; a retry of an old part at a stale offset is refused with where to resume
    stale = client.put(
        f"/v1/uploads/{upload}", params={"offset": 0}, content=data[:1000], headers=headers
    )
    assert stale.status_code == 409 and stale.json()["received"] == 1000
    resume_at = client.get(f"/v1/uploads/{upload}", headers=headers).json()["received"]
    rest = client.put(
        f"/v1/uploads/{upload}",
        params={"offset": resume_at},
        content=data[resume_at:],
        headers=headers,
    )
    assert rest.json()["received"] == len(data)
    done = client.post(f"/v1/uploads/{upload}/complete", headers=headers).json()
    assert (
        done["state"] == "completed"
        and done["source_id"].startswith("src_")
        and done["version_id"].startswith("ver_")
    )
    assert "sha256/" not in str(done)


def test_declared_oversize_is_refused_before_any_byte(
    client: TestClient, headers: dict[str, str]
) -> None:
    created = _create(client, headers, "huge.pdf", 10 * 1024 * 1024 * 1024)
    assert created["status"] == 413 and "limit" in created["message"]


def test_actual_oversize_stops_the_sender(client: TestClient, headers: dict[str, str]) -> None:
    created = _create(client, headers, "small.txt", 10)
    response = client.put(
        f"/v1/uploads/{created['upload_id']}",
        params={"offset": 0},
        content=b"x" * 1000,
        headers=headers,
    )
    assert response.status_code == 413 and "declared size of 10 bytes" in response.json()["message"]
    assert (
        client.get(f"/v1/uploads/{created['upload_id']}", headers=headers).json()["received"] == 0
    )


def test_unknown_extension_and_mismatched_content_are_refused_with_what_is_accepted(
    client: TestClient, headers: dict[str, str]
) -> None:
    unknown = _create(client, headers, "tool.exe", 10)
    assert unknown["status"] == 415 and ".pdf" in unknown["message"]
    data = b"%PDF-1.7 not really a spreadsheet"
    created = _create(client, headers, "sheet.xlsx", len(data))
    client.put(
        f"/v1/uploads/{created['upload_id']}", params={"offset": 0}, content=data, headers=headers
    )
    refused = client.post(f"/v1/uploads/{created['upload_id']}/complete", headers=headers)
    assert refused.status_code == 415 and refused.json()["error"] == "type-mismatch"
    assert "application/pdf" in refused.json()["message"]


def test_an_svg_posing_as_an_image_is_refused(client: TestClient, headers: dict[str, str]) -> None:
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    created = _create(client, headers, "logo.png", len(svg))
    client.put(
        f"/v1/uploads/{created['upload_id']}", params={"offset": 0}, content=svg, headers=headers
    )
    refused = client.post(f"/v1/uploads/{created['upload_id']}/complete", headers=headers)
    assert refused.status_code == 415 and "image/svg+xml" in refused.json()["message"]


def test_completing_early_says_where_to_resume(client: TestClient, headers: dict[str, str]) -> None:
    created = _create(client, headers, "notes.txt", 20)
    client.put(
        f"/v1/uploads/{created['upload_id']}",
        params={"offset": 0},
        content=b"0123456789",
        headers=headers,
    )
    early = client.post(f"/v1/uploads/{created['upload_id']}/complete", headers=headers)
    assert early.status_code == 409 and early.json()["received"] == 10


def test_another_tenant_cannot_see_an_upload(
    client: TestClient, headers: dict[str, str], platform: Platform
) -> None:
    created = _create(client, headers, "mine.txt", 5)
    other = f"v-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(other, other, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(other, [f"tenant:{other}"], "other")
    response = client.get(
        f"/v1/uploads/{created['upload_id']}", headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 404


def test_signed_references_read_until_deleted_and_refuse_forgeries(
    client: TestClient, headers: dict[str, str]
) -> None:
    data = b"# Reference\n\nSigned reads work.\n"
    created = _create(client, headers, "ref.md", len(data))
    client.put(
        f"/v1/uploads/{created['upload_id']}", params={"offset": 0}, content=data, headers=headers
    )
    done = client.post(f"/v1/uploads/{created['upload_id']}/complete", headers=headers).json()
    reference = client.post(
        f"/v1/sources/{done['source_id']}/reference", params={"ttl_seconds": 86400}, headers=headers
    ).json()
    assert reference["url"].startswith("/v1/files/") and "sha256/" not in reference["url"]
    read = client.get(reference["url"])  # no API key: the reference is the capability
    assert read.status_code == 200 and read.content == data
    payload, signature = reference["url"].rsplit("/", 1)[1].split(".")
    forged = client.get(f"/v1/files/{payload}.{'0' * 64}")
    assert forged.status_code == 403 and forged.json()["error"] == "forged"
    client.delete(f"/v1/sources/{done['source_id']}", headers=headers)
    gone = client.get(reference["url"])
    assert gone.status_code == 404


def _send(client: TestClient, headers: dict[str, str], body: dict, data: bytes) -> str:
    created = client.post("/v1/uploads", json={**body, "size": len(data)}, headers=headers)
    assert created.status_code == 201, created.text
    upload = created.json()["upload_id"]
    sent = client.put(f"/v1/uploads/{upload}", params={"offset": 0}, content=data, headers=headers)
    assert sent.status_code == 200
    return str(upload)


def _new_tenant(platform: Platform) -> dict[str, str]:
    tenant = f"u-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "uploader")
    return {"Authorization": f"Bearer {key}"}


def test_replacing_content_needs_approval_and_keeps_the_previous_version_readable(
    client: TestClient, platform: Platform
) -> None:
    headers = _new_tenant(platform)
    first = b"# Policy\n\nThe first version of the policy.\n"
    second = b"# Policy\n\nThe second version replaces the first.\n"
    upload = _send(client, headers, {"filename": "policy.md"}, first)
    v1 = client.post(f"/v1/uploads/{upload}/complete", headers=headers).json()
    upload = _send(client, headers, {"filename": "policy.md"}, second)
    refused = client.post(f"/v1/uploads/{upload}/complete", headers=headers)
    body = refused.json()
    assert refused.status_code == 409 and body["error"] == "approval-required"
    assert "replace_existing=true" in body["alternative"] and body["source_id"] == v1["source_id"]
    # the refusal lost nothing: the upload is still open with its bytes
    assert client.get(f"/v1/uploads/{upload}", headers=headers).json()["state"] == "open"
    approved = client.post(
        f"/v1/uploads/{upload}/complete", json={"replace_existing": True}, headers=headers
    ).json()
    assert approved["state"] == "completed" and approved["source_id"] == v1["source_id"]
    versions = client.get(f"/v1/sources/{v1['source_id']}/versions", headers=headers).json()
    assert [(v["version_no"], v["is_current"]) for v in versions] == [(1, False), (2, True)]
    # the replaced version's bytes are still readable through a signed reference
    ref = client.post(
        f"/v1/sources/{v1['source_id']}/reference", params={"version": 1}, headers=headers
    ).json()
    assert client.get(ref["url"]).content == first
    current = client.post(f"/v1/sources/{v1['source_id']}/reference", headers=headers).json()
    assert client.get(current["url"]).content == second


def test_an_upload_can_target_an_existing_source_by_id(
    client: TestClient, platform: Platform
) -> None:
    headers = _new_tenant(platform)
    upload = _send(client, headers, {"filename": "a.txt"}, b"one\n")
    first = client.post(f"/v1/uploads/{upload}/complete", headers=headers).json()
    upload = _send(
        client, headers, {"filename": "a-v2.txt", "source_id": first["source_id"]}, b"two\n"
    )
    second = client.post(
        f"/v1/uploads/{upload}/complete", json={"replace_existing": True}, headers=headers
    ).json()
    assert second["source_id"] == first["source_id"] and second["version_id"] != first["version_id"]
    other = _new_tenant(platform)
    hidden = client.post(
        "/v1/uploads",
        json={"filename": "x.txt", "size": 1, "source_id": first["source_id"]},
        headers=other,
    )
    assert hidden.status_code == 404


def test_file_listing_is_keyset_paged_with_declared_and_sniffed_types(
    client: TestClient, platform: Platform
) -> None:
    headers = _new_tenant(platform)
    for n in range(5):
        upload = _send(
            client,
            headers,
            {"filename": f"note-{n}.md", "media_type": "text/x-claimed"},
            f"# Note {n}\n\nBody {n}.\n".encode(),
        )
        assert client.post(f"/v1/uploads/{upload}/complete", headers=headers).status_code == 200
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, object] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/v1/files", params=params, headers=headers).json()
        pages += 1
        seen += [f["filename"] for f in page["files"]]
        for f in page["files"]:
            assert f["declared_type"] == "text/x-claimed" and f["sniffed_type"] == "text/markdown"
            assert "blob" not in str(f) and "sha256/" not in str(f)
        cursor = page["next_cursor"]
        if cursor is None:
            break
        if pages == 1:  # a file added mid-listing does not shift the pages after it
            upload = _send(client, headers, {"filename": "late.md"}, b"# Late\n")
            client.post(f"/v1/uploads/{upload}/complete", headers=headers)
    assert pages == 3 and seen == [f"note-{n}.md" for n in (4, 3, 2, 1, 0)]
    bad = client.get("/v1/files", params={"cursor": "not-a-cursor"}, headers=headers)
    assert bad.status_code == 422 and "without a cursor" in bad.json()["message"]
    other = client.get("/v1/files", headers=_new_tenant(platform)).json()
    assert other["files"] == [] and other["next_cursor"] is None


def test_direct_registration_follows_the_same_policy(
    client: TestClient, platform: Platform
) -> None:
    headers = _new_tenant(platform)
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    refused = client.post(
        "/v1/sources", params={"filename": "logo.png"}, content=svg, headers=headers
    )
    assert refused.status_code == 415 and "accepted" in refused.json()["message"]
    first = client.post(
        "/v1/sources", params={"filename": "a.txt"}, content=b"one\n", headers=headers
    )
    assert first.status_code == 201
    again = client.post(
        "/v1/sources", params={"filename": "a.txt"}, content=b"two\n", headers=headers
    )
    assert again.status_code == 409 and again.json()["error"] == "approval-required"
    approved = client.post(
        "/v1/sources",
        params={"filename": "a.txt", "replace_existing": "true"},
        content=b"two\n",
        headers=headers,
    )
    assert approved.status_code == 201 and approved.json()["source_id"] == first.json()["source_id"]


def test_an_upload_session_belongs_to_the_key_that_opened_it(
    client: TestClient, platform: Platform
) -> None:
    """The defect: sessions were checked by tenant only, so another key of the
    same tenant (other subjects) could read, write into and complete someone
    else's session and see its filename and resulting source id."""
    tenant = f"u-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, owner = platform.catalog.create_api_key(tenant, ["team:hr"], "owner")
    _, peer = platform.catalog.create_api_key(tenant, ["team:sales"], "peer")
    _, admin = platform.catalog.create_api_key(
        tenant, ["team:sales"], "admin", ["files:read", "files:write", "sources:admin"]
    )
    mine, theirs, boss = ({"Authorization": f"Bearer {k}"} for k in (owner, peer, admin))
    data = b"# Salaries\n\nconfidential\n"
    upload = _create(client, mine, "salaries.md", len(data))["upload_id"]
    url = f"/v1/uploads/{upload}"
    assert client.get(url, headers=theirs).status_code == 404
    assert client.put(url, params={"offset": 0}, content=data, headers=theirs).status_code == 404
    assert client.post(f"{url}/complete", headers=theirs).status_code == 404
    assert client.get(url, headers=mine).json()["received"] == 0  # nothing was written
    assert client.put(url, params={"offset": 0}, content=data, headers=mine).status_code == 200
    done = client.post(f"{url}/complete", headers=mine)
    assert done.status_code == 200 and done.json()["source_id"]
    seen = client.get(url, headers=theirs)
    assert seen.status_code == 404 and "salaries" not in seen.text
    assert client.get(url, headers=boss).status_code == 200  # an administrator may look


def _staged(platform: Platform, upload: str) -> list[str]:
    return [item.key for item in platform.upload_staging().staged() if upload in item.key]


def test_a_cancelled_upload_keeps_no_byte_and_takes_no_more(
    client: TestClient, headers: dict[str, str], platform: Platform
) -> None:
    data = b"An upload the sender gave up on.\n" * 300_000  # ~10 MB: a part in a bucket
    upload = _create(client, headers, "abandoned.txt", len(data))["upload_id"]
    half = 6 * 1024 * 1024
    sent = client.put(
        f"/v1/uploads/{upload}", params={"offset": 0}, content=data[:half], headers=headers
    )
    assert sent.status_code == 200, sent.text
    assert _staged(platform, upload)
    cancelled = client.delete(f"/v1/uploads/{upload}", headers=headers)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["state"] == "cancelled"
    assert _staged(platform, upload) == []  # the folder's file, or the bucket's multipart upload
    # nothing more is taken, and it never completes
    more = client.put(
        f"/v1/uploads/{upload}", params={"offset": half}, content=data[half:], headers=headers
    )
    assert more.status_code == 409 and more.json()["error"] == "not-open", more.text
    done = client.post(f"/v1/uploads/{upload}/complete", headers=headers)
    assert done.status_code == 409 and done.json()["error"] == "not-open", done.text
    # cancelling again answers the same; progress says cancelled
    again = client.delete(f"/v1/uploads/{upload}", headers=headers)
    assert again.status_code == 200 and again.json()["state"] == "cancelled"
    assert client.get(f"/v1/uploads/{upload}", headers=headers).json()["state"] == "cancelled"


def test_a_completed_upload_cannot_be_cancelled_and_a_stranger_cannot_cancel(
    client: TestClient, headers: dict[str, str], platform: Platform
) -> None:
    data = make.report_pdf()
    upload = _create(client, headers, "kept.pdf", len(data))["upload_id"]
    client.put(f"/v1/uploads/{upload}", params={"offset": 0}, content=data, headers=headers)
    assert client.post(f"/v1/uploads/{upload}/complete", headers=headers).json()["state"] == (
        "completed"
    )
    refused = client.delete(f"/v1/uploads/{upload}", headers=headers)
    assert refused.status_code == 409 and refused.json()["error"] == "already-completed", (
        refused.text
    )
    assert "DELETE /v1/sources/" in refused.json()["alternative"]
    # a session of another key is not found, exactly as one that does not exist
    other = _create(client, headers, "mine.txt", 10)["upload_id"]
    tenant = f"s-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "stranger")
    stranger = client.delete(f"/v1/uploads/{other}", headers={"Authorization": f"Bearer {key}"})
    assert stranger.status_code == 404
    assert client.get(f"/v1/uploads/{other}", headers=headers).json()["state"] == "open"
    assert client.delete("/v1/uploads/upl_nothing", headers=headers).status_code == 404
