"""Every format flows through the assets into chunks, both indexes and
citations with page / slide / sheet!cell locations."""

from __future__ import annotations

import shutil
import uuid

import dagster as dg
import pytest
from fastapi.testclient import TestClient

from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found
from resources.composition.platform import Platform
from retrieval_api.app import create_app
from testbed import documents as make
from tests.e2e.helpers import resource, run_pipeline


@pytest.fixture(scope="module")
def formats_tenant(platform: Platform, index_prefix: str) -> str:
    tenant = f"f-{uuid.uuid4().hex[:8]}"
    folder = platform.settings.inbox_dir / tenant
    folder.mkdir(parents=True)
    (folder / "review.pdf").write_bytes(make.report_pdf())
    (folder / "handbook.docx").write_bytes(make.report_docx())
    (folder / "book.xlsx").write_bytes(make.report_xlsx())
    (folder / "deck.pptx").write_bytes(make.report_pptx())
    (folder / "locked.pdf").write_bytes(make.encrypted_pdf())
    if shutil.which("tesseract"):
        (folder / "scan.pdf").write_bytes(make.scanned_pdf(rotate=90))
    instance = dg.DagsterInstance.ephemeral()
    for result in run_pipeline(
        instance, tenant, platform.settings.default_model_key, resource(index_prefix)
    ):
        assert result.success
    return tenant


def _top(platform: Platform, tenant: str, query: str) -> Found:
    outcome = hybrid_search(
        AccessScope(tenant, (f"tenant:{tenant}",)),
        SearchRequest(query),
        platform.search_engines(platform.settings.default_model_key),
    )
    assert isinstance(outcome, Found), outcome
    return outcome


def test_pdf_table_is_answerable_and_cited_by_page(platform: Platform, formats_tenant: str) -> None:
    top = _top(platform, formats_tenant, "North America revenue Q2-2026 by region").hits[0]
    assert "| Europe | 4.2M | 4.6M |" in top.chunk.body
    # the whole table fits one chunk: it names the table and all its data rows
    assert top.citation.location.page == 1
    assert top.citation.location.label() == "p. 1 · table 1 · rows 1–3"
    assert top.chunk.heading_path == ("Quarterly Review Part 1", "Revenue by region")


def test_docx_xlsx_pptx_locations_reach_citations(platform: Platform, formats_tenant: str) -> None:
    control = _top(platform, formats_tenant, "content control must not be lost").hits[0]
    assert control.chunk.filename == "handbook.docx"
    sheet = _top(platform, formats_tenant, "Storage team people headcount").hits
    assert any(h.citation.location.label().startswith("Headcount!A1:") for h in sheet)
    slide = _top(platform, formats_tenant, "Servers cost budget").hits
    assert any(h.citation.location.slide == 2 for h in slide)


@pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="tesseract-ocr is not installed (./run installs it)"
)
def test_a_rotated_scan_is_ocred_and_searchable(platform: Platform, formats_tenant: str) -> None:
    hits = _top(platform, formats_tenant, "replica fell behind the primary for forty minutes").hits
    assert hits[0].chunk.filename == "scan.pdf"
    assert not hits[0].citation.low_confidence


def test_failures_are_recorded_and_readable_through_the_api(
    platform: Platform, formats_tenant: str
) -> None:
    _, key = platform.catalog.create_api_key(formats_tenant, [f"tenant:{formats_tenant}"], "reader")
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    headers = {"Authorization": f"Bearer {key}"}
    found = _top(platform, formats_tenant, "Quarterly Review Part 2").hits[0]
    window = client.get(f"/v1/sources/{found.chunk.source_id}/read", headers=headers).json()
    assert window["outcome"] == "window" and window["total_blocks"] >= 8
    assert window["blocks"][0]["location_label"] == "p. 1"
    assert window["untrusted_content"].startswith("<<<UNTRUSTED-DOCUMENT-TEXT")
    # the encrypted PDF: a failure value with its sentence, and search never returns it
    with platform.pool.connection() as conn:
        row = conn.execute(
            "SELECT source_id FROM sources WHERE tenant_id = %s AND filename = 'locked.pdf'",
            (formats_tenant,),
        ).fetchone()
    assert row is not None
    status = client.get(f"/v1/sources/{row[0]}/status", headers=headers).json()
    assert status["processing_state"] == "failed" and status["failure_reason"] == "encrypted"
    assert "password" in status["failure_guidance"]
    locked = client.get(f"/v1/sources/{row[0]}/read", headers=headers).json()
    assert locked["outcome"] == "nothing_to_read" and locked["reason"] == "encrypted"
    assert locked["retry_may_help"] is False


def test_tables_on_their_own_with_locations(platform: Platform, formats_tenant: str) -> None:
    _, key = platform.catalog.create_api_key(formats_tenant, [f"tenant:{formats_tenant}"], "tables")
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    hit = _top(platform, formats_tenant, "Storage team people headcount").hits[0]
    body = client.get(
        f"/v1/sources/{hit.chunk.source_id}/tables", headers={"Authorization": f"Bearer {key}"}
    ).json()
    labels = [t["location_label"] for t in body["tables"]]
    assert any(label.startswith("Revenue!A1:") for label in labels)
    assert any(label.startswith("Headcount!A1:") for label in labels)
    headcount = next(t for t in body["tables"] if t["location_label"].startswith("Headcount"))
    assert headcount["untrusted_rows"][0] == ["Team", "People"] and headcount["heading_path"] == [
        "Headcount"
    ]
