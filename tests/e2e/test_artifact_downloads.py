"""Every artifact route that answers with file bytes, against the real catalog:
the stable current download is never cached (`private, no-store`), only a
version-addressed file is `private, immutable` with its checksum as ETag;
every answer names the file in Content-Disposition (RFC 5987 `filename*`),
only a PDF may be `inline` (an HTML preview served inline from the API's own
origin would run its scripts there), and nothing is content-sniffed."""

from __future__ import annotations

import uuid

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from httpx2 import Response

from resources.composition.platform import Platform
from retrieval_api.app import ROUTERS, create_app

REPORT = "# Quarterly report\n\nRevenue grew in the north.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
PROVENANCE = {"tool": "test-writer", "inputs": {"prompt": "write"}, "run": "run-1"}
#: every route that serves artifact bytes; a new one fails the test until it is checked here
FILE_ROUTES = {"/v1/artifacts/{artifact_id}/download", "/v1/artifact-files/{file_id}"}


@pytest.fixture(scope="module")
def client(platform: Platform) -> TestClient:
    return TestClient(create_app(lambda: platform), raise_server_exceptions=False)


@pytest.fixture
def headers(platform: Platform) -> dict[str, str]:
    tenant = f"d-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "downloads")
    return {"Authorization": f"Bearer {key}"}


def _file_routes() -> set[str]:
    return {
        r.path
        for router in ROUTERS
        for r in router.routes
        if isinstance(r, APIRoute)
        and "GET" in (r.methods or ())
        and "artifact" in r.path
        and r.response_model is None
    }


def _disposition(response: Response) -> tuple[str, str]:
    value = response.headers["content-disposition"]
    kind = value.split(";", 1)[0]
    assert "filename*=UTF-8''" in value and 'filename="' in value, value
    return kind, value


def _assert_common(response: Response) -> tuple[str, str]:
    assert response.status_code == 200, response.text
    assert response.headers["x-content-type-options"] == "nosniff"
    kind, value = _disposition(response)
    if response.headers["content-type"].startswith("application/pdf"):
        assert kind in {"inline", "attachment"}
    else:
        assert kind == "attachment", (response.headers["content-type"], value)
    return kind, value


def test_the_file_routes_are_the_ones_checked_here() -> None:
    assert _file_routes() == FILE_ROUTES


def test_current_download_is_never_cached_and_always_named(
    client: TestClient, headers: dict[str, str]
) -> None:
    made = client.post(
        "/v1/artifacts",
        json={"path": "reports/Q3 résumé.md", "markdown": REPORT, "provenance": PROVENANCE},
        headers=headers,
    ).json()
    artifact = made["artifact_id"]
    for fmt in (None, "markdown", "html", "pdf", "docx"):
        params = {"format": fmt} if fmt else {}
        answer = client.get(f"/v1/artifacts/{artifact}/download", params=params, headers=headers)
        kind, value = _assert_common(answer)
        assert answer.headers["cache-control"] == "private, no-store", fmt
        assert "etag" not in answer.headers or "immutable" not in answer.headers["cache-control"]
        assert "r%C3%A9sum%C3%A9" in value  # the real name, RFC 5987-encoded
        if fmt == "pdf":
            assert kind == "inline" and value.count(".pdf") == 2
        if fmt == "html":
            assert kind == "attachment" and ".html" in value


def test_version_addressed_files_are_immutable_with_checksum_etags(
    client: TestClient, headers: dict[str, str]
) -> None:
    made = client.post(
        "/v1/artifacts",
        json={"path": "reports/q3.md", "markdown": REPORT, "provenance": PROVENANCE},
        headers=headers,
    ).json()
    exported = client.post(
        f"/v1/artifacts/{made['artifact_id']}/exports",
        json={"generation": 1, "format": "pdf"},
        headers=headers,
    ).json()
    files = [*made["files"], exported["file"]]
    assert {f["role"] for f in files} == {"primary", "preview", "export"}
    for f in files:
        answer = client.get(f["url"], headers=headers)
        kind, _ = _assert_common(answer)
        assert answer.headers["cache-control"] == "private, immutable"
        assert answer.headers["etag"] == f'"{f["sha256"]}"'
        if f["role"] == "preview":
            assert answer.headers["content-type"].startswith("text/html") and kind == "attachment"
        cached = client.get(f["url"], headers={**headers, "If-None-Match": answer.headers["etag"]})
        assert cached.status_code == 304 and cached.headers["etag"] == answer.headers["etag"]
        assert cached.headers["cache-control"] == "private, immutable"
