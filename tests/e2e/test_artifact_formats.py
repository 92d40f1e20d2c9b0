"""Artifact formats are adapters (groundwork.render.renderers), over HTTP
against the real catalog: a PDF, DOCX, PPTX or XLSX artifact has a primary
file in its format (media type from the adapter, read back by the project's
own extractors), an HTML preview and a private source that no route, manifest
or download shows; an unknown format is refused naming the known ones, and a
format registered as a new adapter is accepted with no schema change."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from groundwork.artifacts import ROLE_LIMITS, size_problem
from groundwork.documents import ExtractedDocument
from groundwork.extract import extract
from groundwork.render import renderers
from resources.composition.platform import Platform
from retrieval_api.app import create_app
from testbed.tenants import tenant_headers
from tests.fakes_rendering import PlainTextRenderer

REPORT = """# Quarterly report

## Summary

Revenue grew in the third quarter, led by the northern region.

## Regions

| Region | Sales | Growth |
|---|---|---|
| North | 40 | 12% |
| South | 25 | 3% |
"""
PROVENANCE = {"tool": "test-writer", "inputs": {"prompt": "write"}, "run": "run-1"}


@pytest.fixture(scope="module")
def client(platform: Platform) -> TestClient:
    return TestClient(create_app(lambda: platform), raise_server_exceptions=False)


@pytest.fixture
def headers(platform: Platform) -> dict[str, str]:
    return tenant_headers(platform, "f", "formats")


def _create(client: TestClient, headers: dict[str, str], fmt: str) -> dict:
    answer = client.post(
        "/v1/artifacts",
        json={"path": "reports/q3.md", "markdown": REPORT, "provenance": PROVENANCE, "format": fmt},
        headers=headers,
    )
    assert answer.status_code == 201, answer.text
    return answer.json()


@pytest.mark.parametrize("fmt", ["pdf", "docx", "pptx", "xlsx"])
def test_a_binary_artifact_has_primary_preview_and_a_private_source(
    client: TestClient, headers: dict[str, str], platform: Platform, fmt: str
) -> None:
    made = _create(client, headers, fmt)
    adapter = renderers.RENDERERS[fmt]
    roles = {f["role"]: f for f in made["files"]}
    assert set(roles) == {"primary", "preview"}  # never `source`
    assert roles["primary"]["format"] == fmt
    assert roles["primary"]["media_type"] == adapter.media_type
    assert roles["preview"]["media_type"] == "text/html"
    # the deliverable is read back by the project's own extractors
    primary = client.get(roles["primary"]["url"], headers=headers)
    parsed = extract(primary.content, adapter.media_type, f"q3{adapter.extension}")
    assert isinstance(parsed, ExtractedDocument)
    text = " ".join(b.text for b in parsed.blocks)
    assert "Revenue grew in the third quarter" in text and "South" in text
    # the stable download is the primary file, named for its format
    current = client.get(f"/v1/artifacts/{made['artifact_id']}/download", headers=headers)
    assert current.content == primary.content
    assert f"q3{adapter.extension}" in current.headers["content-disposition"]
    # the source exists, is never listed and never served
    with platform.catalog.pool.connection() as conn:  # type: ignore[attr-defined]
        source = conn.execute(
            "SELECT file_id FROM artifact_files WHERE artifact_id = %s AND role = 'source'",
            (made["artifact_id"],),
        ).fetchone()
    assert source is not None
    assert client.get(f"/v1/artifact-files/{source[0]}", headers=headers).status_code == 404
    manifest = client.get(f"/v1/artifacts/{made['artifact_id']}", headers=headers).json()
    assert source[0] not in str(manifest) and manifest["generation"] == 1
    # a revision renders the new generation's primary in the same format
    revised = client.post(
        f"/v1/artifacts/{made['artifact_id']}/revise",
        json={
            "expected_generation": 1,
            "edits": [{"op": "append", "text": "Costs should fall next quarter."}],
            "provenance": PROVENANCE,
        },
        headers=headers,
    )
    assert revised.status_code == 200, revised.text
    after = client.get(f"/v1/artifacts/{made['artifact_id']}/download", headers=headers)
    again = extract(after.content, adapter.media_type, f"q3{adapter.extension}")
    assert isinstance(again, ExtractedDocument)
    assert "Costs should fall" in " ".join(b.text for b in again.blocks)


def test_every_format_exports_and_an_unknown_one_is_named(
    client: TestClient, headers: dict[str, str]
) -> None:
    made = _create(client, headers, "markdown")
    for fmt in ("pptx", "xlsx"):
        exported = client.post(
            f"/v1/artifacts/{made['artifact_id']}/exports",
            json={"generation": 1, "format": fmt},
            headers=headers,
        ).json()
        assert exported["state"] == "rendered" and exported["receipt"]["passed"], exported
        assert exported["file"]["media_type"] == renderers.RENDERERS[fmt].media_type
    for route, body in (
        (f"/v1/artifacts/{made['artifact_id']}/exports", {"generation": 1, "format": "odt"}),
        (
            "/v1/artifacts",
            {"path": "x.md", "markdown": "# x", "provenance": PROVENANCE, "format": "odt"},
        ),
    ):
        refused = client.post(route, json=body, headers=headers)
        assert refused.status_code == 422, refused.text
        assert "odt" in refused.text and "pptx" in refused.text and "xlsx" in refused.text
    download = client.get(
        f"/v1/artifacts/{made['artifact_id']}/download", params={"format": "odt"}, headers=headers
    )
    assert download.status_code == 422 and "docx" in download.text


def test_a_new_format_is_an_adapter_not_a_schema_change(
    client: TestClient, headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(renderers.RENDERERS, "txt", PlainTextRenderer())
    made = _create(client, headers, "txt")
    primary = next(f for f in made["files"] if f["role"] == "primary")
    assert primary["media_type"] == "text/plain" and primary["format"] == "txt"
    exported = client.post(
        f"/v1/artifacts/{made['artifact_id']}/exports",
        json={"generation": 1, "format": "txt"},
        headers=headers,
    ).json()
    assert exported["state"] == "rendered" and exported["receipt"]["passed"]


def test_each_role_has_its_size_limit() -> None:
    assert size_problem("source", ROLE_LIMITS["source"]) is None
    assert "source" in (size_problem("source", ROLE_LIMITS["source"] + 1) or "")
    assert ROLE_LIMITS["source"] < ROLE_LIMITS["preview"] < ROLE_LIMITS["primary"]
    assert size_problem("primary", 10, {"primary": 5}) is not None


def test_the_tools_take_the_registrys_formats(client: TestClient, headers: dict[str, str]) -> None:
    provenance = {"tool": "agent", "run": "turn-1", "inputs": "write", "derived_from": []}
    made = client.post(
        "/v1/tools/create_artifact",
        json={"path": "deck.md", "markdown": REPORT, "provenance": provenance, "format": "pptx"},
        headers=headers,
    )
    assert made.status_code == 200, made.text
    artifact = made.json()["artifact_id"]
    manifest = client.get(f"/v1/artifacts/{artifact}", headers=headers).json()
    primary = next(f for f in manifest["files"] if f["role"] == "primary")
    assert primary["format"] == "pptx" and "source" not in {f["role"] for f in manifest["files"]}
    exported = client.post(
        "/v1/tools/export_artifact",
        json={"artifact_id": artifact, "generation": 1, "format": "xlsx"},
        headers=headers,
    )
    assert exported.status_code == 200 and exported.json()["state"] == "rendered", exported.text
    assert set(exported.json()) <= {
        "export_id",
        "state",
        "artifact_file_id",
        "unrenderable",
        "failure_reason",
    }  # a tool result names files by id, never their bytes or a source file


def test_listings_mark_artifacts(client: TestClient, headers: dict[str, str]) -> None:
    """One corpus: a listing shows an artifact's document beside the uploads,
    marked as an artifact with its id (over HTTP and the list_files tool)."""
    made = _create(client, headers, "docx")
    uploaded = client.post(
        "/v1/sources", params={"filename": "notes.txt"}, content=b"plain notes", headers=headers
    )
    assert uploaded.status_code == 201, uploaded.text
    files = client.get("/v1/files", headers=headers).json()["files"]
    by_source = {f["source_id"]: f for f in files}
    artifact_doc = by_source[made["source_id"]]
    assert artifact_doc["document_type"] == "artifact"
    assert artifact_doc["artifact_id"] == made["artifact_id"]
    upload = by_source[uploaded.json()["source_id"]]
    assert upload["document_type"] == "source" and upload["artifact_id"] is None
    listed = client.post("/v1/tools/list_files", json={}, headers=headers).json()["files"]
    marks = {f["file_id"]: (f["document_type"], f.get("artifact_id")) for f in listed}
    assert marks[made["source_id"]] == ("artifact", made["artifact_id"])
    assert marks[uploaded.json()["source_id"]] == ("source", None)
