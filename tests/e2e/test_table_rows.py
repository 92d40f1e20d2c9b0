"""A search hit on one row of a large table cites that row's range, and the
tables listing numbers each row, through the real pipeline and both transports
(issue 15: "extract_tables and citations point at the table and row")."""

from __future__ import annotations

import uuid
from typing import Any

import dagster as dg
import pytest
from fastapi.testclient import TestClient

from resources.composition.platform import Platform
from retrieval_api.app import create_app
from testbed.table_pdfs import senate_expenditure_pdf
from tests.e2e.helpers import resource, run_pipeline
from tests.unit.test_table_rows import _inventory_xlsx


@pytest.fixture(scope="module")
def tables_tenant(platform: Platform, index_prefix: str) -> dict[str, Any]:
    tenant_id = f"rows-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant_id, tenant_id, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "rows")
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=True)
    headers = {"Authorization": f"Bearer {key}"}
    ids: dict[str, str] = {}
    for name, data in {
        "stock.xlsx": _inventory_xlsx()[0],
        "senate.pdf": senate_expenditure_pdf()[0],
    }.items():
        response = client.post(
            "/v1/sources", params={"filename": name}, content=data, headers=headers
        )
        assert response.status_code == 201, response.text
        ids[name] = response.json()["source_id"]
    for result in run_pipeline(
        dg.DagsterInstance.ephemeral(),
        tenant_id,
        platform.settings.default_model_key,
        resource(index_prefix),
    ):
        assert result.success
    return {"client": client, "headers": headers, "ids": ids}


def _hits(tenant: dict[str, Any], query: str) -> list[dict[str, Any]]:
    response = tenant["client"].post(
        "/v1/search", json={"query": query, "mode": "keyword"}, headers=tenant["headers"]
    )
    assert response.status_code == 200, response.text
    hits: list[dict[str, Any]] = response.json()["hits"]
    return hits


def _tool(tenant: dict[str, Any], name: str, args: dict[str, Any]) -> dict[str, Any]:
    response = tenant["client"].post(f"/v1/tools/{name}", json=args, headers=tenant["headers"])
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_hit_on_a_sheet_row_cites_the_rows_of_its_chunk(tables_tenant: dict[str, Any]) -> None:
    hits = _hits(tables_tenant, "SKU-0077")
    top = hits[0]
    assert "SKU-0077" in top["untrusted_text"]
    location = top["citation"]["location"]
    assert location["table"] == 1 and location["row_start"] <= 77 <= location["row_end"]
    assert location["row_end"] - location["row_start"] < 99  # a chunk of rows, not all
    first, last = location["row_start"] + 3, location["row_end"] + 3  # header on sheet row 3
    assert top["citation"]["location_label"] == f"Stock!A{first}:G{last}"
    # the tool transport cites the same rows
    found = _tool(tables_tenant, "search_files", {"query": "SKU-0077"})
    same = [h for h in found["hits"] if "SKU-0077" in h["untrusted_text"]]
    assert same and same[0]["citation"]["location"] == location
    assert same[0]["location"] == top["citation"]["location_label"]


def test_a_hit_on_a_pdf_row_cites_the_rows_and_their_box(tables_tenant: dict[str, Any]) -> None:
    hits = _hits(tables_tenant, "UNITED AIRLINES AIRFARE 1,482.60")
    top = hits[0]
    assert "1,482.60" in top["untrusted_text"]
    location = top["citation"]["location"]
    label = top["citation"]["location_label"]
    assert location["page"] == 1 and location["table"] == 1
    assert label == f"p. 1 · table 1 · rows {location['row_start']}–{location['row_end']}"
    listed = tables_tenant["client"].get(
        f"/v1/sources/{tables_tenant['ids']['senate.pdf']}/tables", headers=tables_tenant["headers"]
    )
    [table] = listed.json()["tables"]
    x0, low, x1, high = table["location"]["bbox"]
    bx0, blow, bx1, bhigh = location["bbox"]
    assert (bx0, bx1) == (x0, x1) and low <= blow < bhigh <= high
    assert bhigh - blow < high - low  # narrowed to the chunk's rows
    # the cited range holds the row the hit was on
    row = next(
        n
        for n, r in zip(table["row_numbers"], table["untrusted_rows"], strict=True)
        if "1,482.60" in r
    )
    assert location["row_start"] <= row <= location["row_end"]


def test_tables_listing_numbers_rows_the_same_through_both_transports(
    tables_tenant: dict[str, Any],
) -> None:
    source = tables_tenant["ids"]["stock.xlsx"]
    listed = tables_tenant["client"].get(
        f"/v1/sources/{source}/tables", headers=tables_tenant["headers"]
    )
    assert listed.status_code == 200
    [http] = listed.json()["tables"]
    [tool] = _tool(tables_tenant, "extract_tables", {"file_id": source})["tables"]
    assert http["index"] == tool["index"] == 0 and http["number"] == tool["number"] == 1
    assert http["row_numbers"] == tool["row_numbers"] == list(range(0, 101))
    assert http["untrusted_rows"] == tool["untrusted_rows"]
    assert http["untrusted_rows"][77][0] == "SKU-0077"
    assert http["location_label"] == tool["location"] == "Stock!A3:G103"
