"""Artifacts over HTTP against the real catalog: versions by compare-and-set,
approval-gated edits, restore by reference, exports once per version and
format, deterministic PDFs read back by the parsers, PDF composition,
conversion, staleness, and files that must never be served."""

from __future__ import annotations

import io
import threading
import uuid
from collections.abc import Callable

import psycopg
import pytest
from fastapi.testclient import TestClient
from pypdf import PdfReader

from groundwork.artifact_edits import edit_from_dict, proposal_digest
from groundwork.artifact_exports import render_markdown
from groundwork.documents import ExtractedDocument
from groundwork.extract import extract
from groundwork.render import ExportFormat
from groundwork.render.pdf import FIXED_CREATION_DATE
from resources.composition.platform import Platform
from retrieval_api.app import create_app
from testbed import documents as make
from testbed.tenants import tenant_headers

REPORT = """# Quarterly report

## Summary

Revenue grew in the third quarter, led by the northern region.

## Regions

| Region | Sales | Growth |
|---|---|---|
| North | 40 | 12% |
| South | 25 | 3% |

## Outlook

Costs should fall next quarter.
"""
PROVENANCE = {"tool": "test-writer", "inputs": {"prompt": "write the report"}, "run": "run-1"}


@pytest.fixture(scope="module")
def client(platform: Platform) -> TestClient:
    return TestClient(create_app(lambda: platform), raise_server_exceptions=False)


@pytest.fixture
def headers(platform: Platform) -> dict[str, str]:
    return tenant_headers(platform, "a", "artifacts")


def _create(
    client: TestClient, headers: dict[str, str], markdown: str = REPORT, **extra: object
) -> dict:
    body = {"path": "reports/q3.md", "markdown": markdown, "provenance": PROVENANCE, **extra}
    response = client.post("/v1/artifacts", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


def _revise(client: TestClient, headers: dict[str, str], artifact: str, **body: object):  # type: ignore[no-untyped-def]
    return client.post(
        f"/v1/artifacts/{artifact}/revise", json={"provenance": PROVENANCE, **body}, headers=headers
    )


def test_create_gives_a_document_with_files_by_role(
    client: TestClient, headers: dict[str, str]
) -> None:
    made = _create(client, headers)
    assert made["generation"] == 1 and made["title"] == "Quarterly report"
    assert made["untrusted_markdown"] == REPORT and made["path"] == "reports/q3.md"
    assert {f["role"] for f in made["files"]} == {"primary", "preview"}  # never `source`
    history = client.get(f"/v1/artifacts/{made['artifact_id']}/history", headers=headers).json()
    assert [h["generation"] for h in history] == [1]
    assert history[0]["provenance"]["tool"] == "test-writer"
    # provenance is required
    missing = client.post(
        "/v1/artifacts", json={"path": "x.md", "markdown": "# x"}, headers=headers
    )
    assert missing.status_code == 422
    # one corpus: the artifact's document is an ordinary source of type artifact
    status = client.get(f"/v1/sources/{made['source_id']}/status", headers=headers)
    assert status.status_code == 200


def test_concurrent_revisions_exactly_one_wins(client: TestClient, headers: dict[str, str]) -> None:
    made = _create(client, headers)
    results: list[int] = []
    barrier = threading.Barrier(2)

    def writer(n: int) -> None:
        barrier.wait()
        response = _revise(
            client,
            headers,
            made["artifact_id"],
            expected_generation=1,
            edits=[{"op": "append", "text": f"Note from writer {n}."}],
        )
        results.append(response.status_code)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [200, 409]
    now = client.get(f"/v1/artifacts/{made['artifact_id']}", headers=headers).json()
    assert now["generation"] == 2 and now["untrusted_markdown"].count("Note from writer") == 1
    stale = _revise(
        client,
        headers,
        made["artifact_id"],
        expected_generation=1,
        edits=[{"op": "append", "text": "late"}],
    )
    assert stale.status_code == 409 and stale.json()["error"] == "stale_generation"
    assert "reload" in stale.json()["message"] and stale.json()["current_generation"] == 2


def _approver_headers(platform: Platform, headers: dict[str, str]) -> dict[str, str]:
    who = platform.catalog.principal_for_key(headers["Authorization"][7:])
    assert who is not None
    _, key = platform.catalog.create_api_key(
        who.tenant_id, list(who.subjects), "approver", ["files:read", "artifacts:approve"]
    )
    return {"Authorization": f"Bearer {key}"}


def test_destructive_edits_need_an_approval_by_another_scope(
    client: TestClient, headers: dict[str, str], platform: Platform
) -> None:
    made = _create(client, headers)
    artifact = made["artifact_id"]
    inserted = _revise(
        client,
        headers,
        artifact,
        expected_generation=1,
        edits=[
            {
                "op": "insert_section",
                "heading": "Risks",
                "body": "Supply may tighten.",
                "after": "Regions",
            }
        ],
    )
    assert inserted.status_code == 200 and inserted.json()["generation"] == 2
    edits = [
        {"op": "delete_section", "heading": "Outlook"},
        {"op": "update_table_cell", "table": 0, "row": 1, "column": 1, "value": "41"},
    ]
    refused = _revise(client, headers, artifact, expected_generation=2, edits=edits)
    body = refused.json()
    assert refused.status_code == 409 and body["error"] == "approval_required"
    assert any("Outlook" in d for d in body["destroys"]) and any(
        "'40'" in d for d in body["destroys"]
    )
    unchanged = client.get(f"/v1/artifacts/{artifact}", headers=headers).json()
    assert unchanged["generation"] == 2 and "Outlook" in unchanged["untrusted_markdown"]
    # the old defect: the token was a hash the proposer could compute and resubmit itself
    digest = proposal_digest(artifact, 2, [edit_from_dict(e) for e in edits])
    for forged in ("0" * 32, digest, body["proposal_token"]):
        wrong = _revise(
            client, headers, artifact, expected_generation=2, edits=edits, approval_token=forged
        )
        assert wrong.status_code in (409, 422) and wrong.json()["error"] != "ok", forged
        assert (
            "Outlook"
            in client.get(f"/v1/artifacts/{artifact}", headers=headers).json()["untrusted_markdown"]
        )
    # the proposer's own key (no artifacts:approve) cannot approve
    approve_url = f"/v1/artifacts/{artifact}/approve"
    own = client.post(approve_url, json={"proposal_token": body["proposal_token"]}, headers=headers)
    assert own.status_code == 403 and own.json()["error"] == "forbidden"
    approver = _approver_headers(platform, headers)
    granted = client.post(
        approve_url, json={"proposal_token": body["proposal_token"]}, headers=approver
    )
    assert granted.status_code == 200, granted.text
    token = granted.json()["approval_token"]
    # an approval names exactly the approved edits
    other = [{"op": "delete_section", "heading": "Regions"}]
    assert (
        _revise(
            client, headers, artifact, expected_generation=2, edits=other, approval_token=token
        ).status_code
        == 409
    )
    approved = _revise(
        client,
        headers,
        artifact,
        expected_generation=2,
        edits=edits,
        approval_token=token,
    )
    assert approved.status_code == 200, approved.text
    after = client.get(f"/v1/artifacts/{artifact}", headers=headers).json()["untrusted_markdown"]
    assert "Outlook" not in after and "| North | 41 | 12% |" in after and "## Risks" in after
    assert after.index("## Risks") > after.index("## Regions")


def test_restore_creates_a_new_version_by_reference(
    client: TestClient, headers: dict[str, str], platform: Platform
) -> None:
    made = _create(client, headers)
    artifact = made["artifact_id"]
    _revise(
        client,
        headers,
        artifact,
        expected_generation=1,
        markdown="# Rewritten\n\nAll new.\n",
        approval_token=None,
    )
    # replacing the whole body is destructive: approval first
    refused = _revise(
        client, headers, artifact, expected_generation=1, markdown="# Rewritten\n\nAll new.\n"
    )
    proposal = refused.json()["proposal_token"]
    assert refused.status_code == 409 and proposal
    token = client.post(
        f"/v1/artifacts/{artifact}/approve",
        json={"proposal_token": proposal},
        headers=_approver_headers(platform, headers),
    ).json()["approval_token"]
    done = _revise(
        client,
        headers,
        artifact,
        expected_generation=1,
        markdown="# Rewritten\n\nAll new.\n",
        approval_token=token,
    )
    assert done.json()["generation"] == 2
    restored = client.post(
        f"/v1/artifacts/{artifact}/restore",
        json={"expected_generation": 2, "generation": 1},
        headers=headers,
    ).json()
    assert restored["generation"] == 3
    manifest = client.get(f"/v1/artifacts/{artifact}", headers=headers).json()
    assert manifest["untrusted_markdown"] == REPORT
    history = client.get(f"/v1/artifacts/{artifact}/history", headers=headers).json()
    assert [h["generation"] for h in history] == [1, 2, 3] and history[2]["restored_from"] == 1
    versions = {
        v.generation: v
        for v in platform.artifacts.versions(
            platform.catalog.principal_for_key(headers["Authorization"][7:]).scope,
            artifact,  # type: ignore[union-attr]
        )
    }
    assert versions[3].blob_key == versions[1].blob_key  # by reference, no copy
    assert versions[3].source_version_id != versions[1].source_version_id  # never backwards


def test_exports_render_once_and_read_back(client: TestClient, headers: dict[str, str]) -> None:
    made = _create(client, headers)
    artifact = made["artifact_id"]
    results: list[dict] = []

    def export(fmt: str) -> Callable[[], None]:
        def run() -> None:
            results.append(
                client.post(
                    f"/v1/artifacts/{artifact}/exports",
                    json={"generation": 1, "format": fmt},
                    headers=headers,
                ).json()
            )

        return run

    threads = [threading.Thread(target=export("pdf")) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {r["export_id"] for r in results} == {results[0]["export_id"]}
    assert {r["file"]["file_id"] for r in results} == {results[0]["file"]["file_id"]}
    first = results[0]
    assert first["state"] == "rendered" and first["receipt"]["passed"]
    pdf = client.get(first["file"]["url"], headers=headers)
    assert pdf.headers["etag"] == f'"{first["file"]["sha256"]}"'
    assert (
        client.get(
            first["file"]["url"], headers={**headers, "If-None-Match": pdf.headers["etag"]}
        ).status_code
        == 304
    )
    parsed = extract(pdf.content, "application/pdf", "q3.pdf")
    assert isinstance(parsed, ExtractedDocument)
    text = " ".join(b.text for b in parsed.blocks)
    assert "Quarterly report" in text and "Costs should fall" in text and "North" in text
    docx = client.post(
        f"/v1/artifacts/{artifact}/exports",
        json={"generation": 1, "format": "docx"},
        headers=headers,
    ).json()
    assert docx["receipt"]["passed"] and docx["receipt"]["checked"] >= 10
    parsed_docx = extract(
        client.get(docx["file"]["url"], headers=headers).content,
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "q3.docx",
    )
    assert isinstance(parsed_docx, ExtractedDocument)
    tables = [b.table for b in parsed_docx.blocks if b.table is not None]
    assert tables and ("South", "25", "3%") in tables[0].rows
    headings = [b.text for b in parsed_docx.blocks if b.kind.value == "heading"]
    assert {"Quarterly report", "Summary", "Regions", "Outlook"} <= set(headings)
    html = client.get(
        f"/v1/artifacts/{artifact}/download", params={"format": "html"}, headers=headers
    )
    assert html.status_code == 200 and "<h2>Regions</h2>" in html.text


def test_pdf_bytes_are_deterministic_with_the_fixed_date() -> None:
    assert FIXED_CREATION_DATE.isoformat() == "2000-01-01T00:00:00+00:00"
    one, _ = render_markdown(REPORT, ExportFormat.PDF, "Quarterly report")
    two, _ = render_markdown(REPORT, ExportFormat.PDF, "Quarterly report")
    assert one.data == two.data and b"D:20000101000000" in one.data
    other, _ = render_markdown(REPORT + "\nOne more line.\n", ExportFormat.PDF, "Quarterly report")
    assert other.data != one.data
    wide = (
        "# T\n\n"
        + "x" * 400
        + " and 漢字 too.\n\n| a | b |\n|---|---|\n"
        + "".join(f"| row {i} | {'cell ' * 8}{i} |\n" for i in range(120))
    )
    rendered, receipt = render_markdown(wide, ExportFormat.PDF, "T")
    assert rendered.unrenderable == ("U+6F22", "U+5B57")  # reported, drawn as a visible marker
    assert receipt is not None and receipt["passed"]
    reader = PdfReader(io.BytesIO(rendered.data))
    assert len(reader.pages) >= 3
    assert all(
        "row" in page.extract_text() and " a " in f" {page.extract_text()} "
        for page in reader.pages[1:]
    )


def test_a_failed_render_leaves_no_file_and_retries(
    client: TestClient, headers: dict[str, str], platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    import groundwork.artifact_exports as exports

    made = _create(client, headers)

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(exports, "render_markdown", broken)
    failed = client.post(
        f"/v1/artifacts/{made['artifact_id']}/exports",
        json={"generation": 1, "format": "pdf"},
        headers=headers,
    ).json()
    assert (
        failed["state"] == "failed"
        and "renderer crashed" in failed["failure_reason"]
        and failed["file"] is None
    )
    monkeypatch.undo()
    retried = client.post(
        f"/v1/artifacts/{made['artifact_id']}/exports",
        json={"generation": 1, "format": "pdf"},
        headers=headers,
    ).json()
    assert retried["state"] == "rendered" and retried["export_id"] == failed["export_id"]
    with pytest.raises(psycopg.errors.CheckViolation), platform.pool.connection() as conn:
        conn.execute(
            "UPDATE artifact_exports SET state = 'rendered', file_id = NULL WHERE export_id = %s",
            (failed["export_id"],),
        )


def test_source_files_are_unreachable_and_other_tenants_see_nothing(
    client: TestClient, headers: dict[str, str], platform: Platform
) -> None:
    made = _create(client, headers)
    with platform.pool.connection() as conn:
        row = conn.execute(
            "SELECT file_id FROM artifact_files WHERE artifact_id = %s AND role = 'source'",
            (made["artifact_id"],),
        ).fetchone()
    assert row is not None
    assert client.get(f"/v1/artifact-files/{row[0]}", headers=headers).status_code == 404
    assert (
        client.post(
            "/v1/convert",
            json={"input": {"artifact_file_id": row[0]}, "target": "pdf"},
            headers=headers,
        ).status_code
        == 404
    )
    tenant = f"a-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "other")
    other = {"Authorization": f"Bearer {key}"}
    assert client.get(f"/v1/artifacts/{made['artifact_id']}", headers=other).status_code == 404
    primary = next(f for f in made["files"] if f["role"] == "primary")
    assert client.get(primary["url"], headers=other).status_code == 404
    missing = client.get("/v1/artifacts/art_doesnotexist", headers=headers)
    assert (
        missing.status_code == 404
        and missing.json()["error"]
        == client.get(f"/v1/artifacts/{made['artifact_id']}", headers=other).json()["error"]
    )


def test_the_ordinary_write_path_cannot_edit_an_artifact(
    client: TestClient, headers: dict[str, str]
) -> None:
    made = _create(client, headers)
    body = b"# Hijacked\n"
    created = client.post(
        "/v1/uploads",
        json={"filename": "q3.md", "size": len(body), "source_id": made["source_id"]},
        headers=headers,
    ).json()
    client.put(
        f"/v1/uploads/{created['upload_id']}", params={"offset": 0}, content=body, headers=headers
    )
    refused = client.post(
        f"/v1/uploads/{created['upload_id']}/complete",
        json={"replace_existing": True},
        headers=headers,
    )
    assert refused.status_code == 422 and "revise" in refused.json()["message"]
    assert (
        client.get(f"/v1/artifacts/{made['artifact_id']}", headers=headers).json()[
            "untrusted_markdown"
        ]
        == REPORT
    )


def test_stale_when_a_cited_source_changes_or_goes(
    client: TestClient, headers: dict[str, str]
) -> None:
    first = client.post(
        "/v1/sources",
        params={"filename": "facts.md"},
        content=b"# Facts\n\nOne.\n",
        headers=headers,
    ).json()
    cited = {"source_id": first["source_id"], "version_id": first["version_id"]}
    made = _create(client, headers, provenance={**PROVENANCE, "derived_from": [cited]})
    assert made["stale"] is False
    client.post(
        "/v1/sources",
        params={"filename": "facts.md", "replace_existing": "true"},
        content=b"# Facts\n\nTwo.\n",
        headers=headers,
    )
    changed = client.get(f"/v1/artifacts/{made['artifact_id']}", headers=headers).json()
    assert changed["stale"] and "newer version" in changed["stale_reasons"][0]
    client.delete(f"/v1/sources/{first['source_id']}", headers=headers)
    gone = client.get(f"/v1/artifacts/{made['artifact_id']}", headers=headers).json()
    assert "deleted" in gone["stale_reasons"][0]


def test_deleting_an_artifact_deletes_its_document(
    client: TestClient, headers: dict[str, str]
) -> None:
    made = _create(client, headers)
    assert client.delete(f"/v1/artifacts/{made['artifact_id']}", headers=headers).status_code == 200
    assert client.get(f"/v1/artifacts/{made['artifact_id']}", headers=headers).status_code == 404
    assert client.get(f"/v1/sources/{made['source_id']}/status", headers=headers).status_code == 404


def test_merge_split_watermark_and_convert_make_new_files(
    client: TestClient, headers: dict[str, str], platform: Platform
) -> None:
    a = client.post(
        "/v1/sources", params={"filename": "a.pdf"}, content=make.report_pdf(2), headers=headers
    ).json()
    b = client.post(
        "/v1/sources", params={"filename": "b.pdf"}, content=make.report_pdf(3), headers=headers
    ).json()
    original = client.post(f"/v1/sources/{a['source_id']}/reference", headers=headers).json()
    before = client.get(original["url"]).content
    merged = client.post(
        "/v1/pdf/merge",
        json={
            "inputs": [{"source_id": a["source_id"]}, {"source_id": b["source_id"]}],
            "filename": "ab.pdf",
        },
        headers=headers,
    )
    assert merged.status_code == 201, merged.text
    merged_id = merged.json()["files"][0]["source_id"]
    ref = client.post(f"/v1/sources/{merged_id}/reference", headers=headers).json()
    assert len(PdfReader(io.BytesIO(client.get(ref["url"]).content)).pages) == 5
    parts = client.post(
        "/v1/pdf/split",
        json={"input": {"source_id": merged_id}, "ranges": "1-2,5", "filename_prefix": "ab"},
        headers=headers,
    ).json()["files"]
    assert len(parts) == 2
    bad = client.post(
        "/v1/pdf/split",
        json={"input": {"source_id": merged_id}, "ranges": "4-9", "filename_prefix": "x"},
        headers=headers,
    )
    assert bad.status_code == 422 and "outside 1-5" in bad.json()["message"]
    marked = client.post(
        "/v1/pdf/watermark",
        json={"input": {"source_id": a["source_id"]}, "text": "DRAFT", "filename": "a-draft.pdf"},
        headers=headers,
    ).json()["files"][0]
    ref = client.post(f"/v1/sources/{marked['source_id']}/reference", headers=headers).json()
    assert "DRAFT" in PdfReader(io.BytesIO(client.get(ref["url"]).content)).pages[0].extract_text()
    assert client.get(original["url"]).content == before  # the original is untouched
    docx = client.post(
        "/v1/sources", params={"filename": "r.docx"}, content=make.report_docx(), headers=headers
    ).json()
    as_pdf = client.post(
        "/v1/convert",
        json={"input": {"source_id": docx["source_id"]}, "target": "pdf"},
        headers=headers,
    )
    assert (
        as_pdf.status_code == 201 and as_pdf.json()["files"][0]["media_type"] == "application/pdf"
    )
    table = client.post(
        "/v1/sources", params={"filename": "t.csv"}, content=b"a,b\n1,2\n", headers=headers
    ).json()
    as_xlsx = client.post(
        "/v1/convert",
        json={"input": {"source_id": table["source_id"]}, "target": "xlsx"},
        headers=headers,
    )
    assert as_xlsx.status_code == 201 and as_xlsx.json()["files"][0]["media_type"].endswith(
        "spreadsheetml.sheet"
    )
    refused = client.post(
        "/v1/convert",
        json={"input": {"source_id": table["source_id"]}, "target": "pdf"},
        headers=headers,
    )
    assert refused.status_code == 415 and "supported:" in refused.json()["message"]


def test_an_exports_title_is_the_versions_own_whichever_transport_asks_first(
    client: TestClient, headers: dict[str, str]
) -> None:
    """The defect: the tool titled an export with the file path, HTTP with the
    current version's extracted title, and the file rendered first was then
    served to both. The title now comes from the exported version itself."""
    made = _create(client, headers)
    via_tool = client.post(
        "/v1/tools/export_artifact",
        json={"artifact_id": made["artifact_id"], "generation": 1, "format": "html"},
        headers=headers,
    )
    assert via_tool.status_code == 200, via_tool.text
    via_http = client.post(
        f"/v1/artifacts/{made['artifact_id']}/exports",
        json={"generation": 1, "format": "html"},
        headers=headers,
    ).json()
    assert via_http["file"]["file_id"] == via_tool.json()["artifact_file_id"]
    html = client.get(via_http["file"]["url"], headers=headers).text
    assert "<title>Quarterly report</title>" in html and "reports/q3.md" not in html
