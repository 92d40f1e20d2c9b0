"""Page composition over HTTP (issue 35): /v1/pdf/reorder, /v1/pdf/insert and
/v1/pdf/rotate write a new PDF (re-read here) through the registration path,
beside merge/split/watermark; bounded inputs are refused with 422, another
tenant's file is not found, and the original's bytes never change."""

from __future__ import annotations

import io
import uuid

from fastapi.testclient import TestClient
from pypdf import PdfReader

from resources.composition.platform import Platform
from retrieval_api.app import create_app
from testbed import documents as make


def _tenant(platform: Platform) -> tuple[TestClient, dict[str, str]]:
    tenant_id = f"pages-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant_id, tenant_id, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "agent")
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    return client, {"Authorization": f"Bearer {key}"}


def _upload(client: TestClient, headers: dict[str, str], name: str, data: bytes) -> str:
    made = client.post("/v1/sources", params={"filename": name}, content=data, headers=headers)
    assert made.status_code == 201, made.text
    return str(made.json()["source_id"])


def _read(client: TestClient, headers: dict[str, str], source_id: str) -> PdfReader:
    ref = client.post(f"/v1/sources/{source_id}/reference", headers=headers).json()
    return PdfReader(io.BytesIO(client.get(ref["url"]).content))


def _titles(reader: PdfReader) -> list[str]:
    return [page.extract_text().split("\n")[0].strip() for page in reader.pages]


def test_reorder_insert_and_rotate_write_new_pdfs(platform: Platform) -> None:
    client, headers = _tenant(platform)
    report = _upload(client, headers, "report.pdf", make.report_pdf(3))
    cover = _upload(client, headers, "cover.pdf", make.report_pdf(1))
    original = client.post(f"/v1/sources/{report}/reference", headers=headers).json()
    before = client.get(original["url"]).content

    reordered = client.post(
        "/v1/pdf/reorder",
        json={"input": {"source_id": report}, "order": [3, 2, 1], "filename": "reversed.pdf"},
        headers=headers,
    )
    assert reordered.status_code == 201, reordered.text
    made = reordered.json()["files"][0]["source_id"]
    assert _titles(_read(client, headers, made))[0].endswith("Part 3")

    inserted = client.post(
        "/v1/pdf/insert",
        json={
            "input": {"source_id": report},
            "insert": {"source_id": cover},
            "after": 0,
            "filename": "with-cover.pdf",
        },
        headers=headers,
    )
    assert inserted.status_code == 201, inserted.text
    pages = _read(client, headers, inserted.json()["files"][0]["source_id"])
    assert len(pages.pages) == 4

    rotated = client.post(
        "/v1/pdf/rotate",
        json={
            "input": {"source_id": report},
            "pages": "2-3",
            "degrees": 90,
            "filename": "turned.pdf",
        },
        headers=headers,
    )
    assert rotated.status_code == 201, rotated.text
    turned = _read(client, headers, rotated.json()["files"][0]["source_id"])
    assert [p.rotation for p in turned.pages] == [0, 90, 90]
    assert client.get(original["url"]).content == before  # the original is untouched


def test_bounds_and_walls(platform: Platform) -> None:
    client, headers = _tenant(platform)
    report = _upload(client, headers, "report.pdf", make.report_pdf(2))
    dropped = client.post(
        "/v1/pdf/reorder",
        json={"input": {"source_id": report}, "order": [1], "filename": "short.pdf"},
        headers=headers,
    )
    assert dropped.status_code == 422 and "every page once" in dropped.json()["message"]
    too_long = client.post(
        "/v1/pdf/reorder",
        json={"input": {"source_id": report}, "order": [1] * 5001, "filename": "x.pdf"},
        headers=headers,
    )
    assert too_long.status_code == 422
    crooked = client.post(
        "/v1/pdf/rotate",
        json={"input": {"source_id": report}, "pages": "1", "degrees": 45, "filename": "c.pdf"},
        headers=headers,
    )
    assert crooked.status_code == 422
    other_client, other_headers = _tenant(platform)
    theirs = _upload(other_client, other_headers, "theirs.pdf", make.report_pdf(1))
    stolen = client.post(
        "/v1/pdf/insert",
        json={
            "input": {"source_id": report},
            "insert": {"source_id": theirs},
            "after": 1,
            "filename": "stolen.pdf",
        },
        headers=headers,
    )
    assert stolen.status_code == 404, stolen.text
