"""Content decides the type at registration: a ZIP named report.pdf or an empty
file is refused over HTTP with a clear error that lists what is accepted."""

from __future__ import annotations

import io
import uuid
import zipfile

import pytest
from fastapi.testclient import TestClient

from resources.composition.platform import Platform
from retrieval_api.app import create_app


@pytest.fixture(scope="module")
def client(platform: Platform) -> TestClient:
    return TestClient(create_app(lambda: platform), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def headers(platform: Platform) -> dict[str, str]:
    tenant = f"s-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "uploader")
    return {"Authorization": f"Bearer {key}"}


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("payload/readme.txt", "not a pdf")
    return buffer.getvalue()


@pytest.mark.parametrize("filename", ["report.pdf", "memo.docx"])
def test_a_zip_named_as_a_document_is_refused_with_what_is_accepted(
    client: TestClient, headers: dict[str, str], filename: str
) -> None:
    response = client.post(
        "/v1/sources", params={"filename": filename}, content=_zip(), headers=headers
    )
    assert response.status_code == 415
    body = response.json()
    assert body["error"] == "type-mismatch"
    assert "application/zip" in body["message"] and ".pdf" in body["message"]


def test_an_empty_file_is_refused_as_empty(client: TestClient, headers: dict[str, str]) -> None:
    response = client.post(
        "/v1/sources", params={"filename": "report.pdf"}, content=b"", headers=headers
    )
    assert response.status_code == 415
    assert response.json()["error"] == "empty-file"
    assert "0 bytes" in response.json()["message"]


def test_an_empty_upload_session_is_refused_as_empty(
    client: TestClient, headers: dict[str, str]
) -> None:
    created = client.post(
        "/v1/uploads", json={"filename": "notes.md", "size": 0}, headers=headers
    ).json()
    done = client.post(f"/v1/uploads/{created['upload_id']}/complete", headers=headers)
    assert done.status_code == 415 and done.json()["error"] == "empty-file"
