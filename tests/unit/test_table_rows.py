"""Citations and `extract_tables` point at the table and the row (issue 15).

A chunk of a large table names the data rows it holds (1-based, header
excluded) and, where the source knows them, narrows its place to those rows:
the sheet's cell range for XLSX, the rows' box for a PDF. Every fixture is
generated here: the rows it was drawn from are the ground truth."""

from __future__ import annotations

import io
import re
from dataclasses import replace
from datetime import UTC, datetime

import openpyxl
from fpdf import FPDF

from groundwork.chunking import Chunk, ChunkingPolicy, chunk_blocks
from groundwork.citation_check import CitationMiss, CitationVerified, verify_citation
from groundwork.citations import Citation, excerpt
from groundwork.documents import Block, BlockKind, ExtractedDocument, Location, Table
from groundwork.extract import extract
from groundwork.reading import extract_tables
from testbed.table_pdfs import senate_expenditure_pdf

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
POLICY = ChunkingPolicy(max_tokens=200)


def _ok(result: object) -> ExtractedDocument:
    assert isinstance(result, ExtractedDocument), result
    return result


def _chunks(doc: ExtractedDocument) -> list[Chunk]:
    return chunk_blocks(doc.blocks, tenant_id="t", source_id="s", version_id="v", policy=POLICY)


def _body_rows(chunk: Chunk, table: Table) -> list[int]:
    """The 1-based data rows whose cells appear as a Markdown line of the chunk."""
    lines = set(chunk.body.splitlines())
    return [
        n for n, row in enumerate(table.body, start=1) if "| " + " | ".join(row) + " |" in lines
    ]


def _inventory_xlsx(rows: int = 100) -> tuple[bytes, list[tuple[str, ...]]]:
    """A 7-column table with its header on sheet row 3 (a title and a blank row above)."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Stock"
    sheet["A1"] = "Warehouse stock"
    header = ("SKU", "Item", "Bin", "Supplier", "Count", "Unit", "Price")
    data = [
        (
            f"SKU-{n:04d}",
            f"widget model {n}",
            f"B{n % 17}",
            f"supplier {n % 5}",
            str(n * 3),
            "pcs",
            f"{n}.50",
        )
        for n in range(1, rows + 1)
    ]
    for r, row in enumerate([header, *data], start=3):
        for c, value in enumerate(row, start=1):
            sheet.cell(r, c, value)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue(), [header, *data]


def test_xlsx_table_chunks_name_their_rows_and_narrow_the_cell_range() -> None:
    data, rows = _inventory_xlsx()
    doc = _ok(extract(data, XLSX, "stock.xlsx"))
    [located] = extract_tables(doc)
    assert located.table.body == tuple(rows[1:])
    chunks = [c for c in _chunks(doc) if c.kind == "table"]
    assert len(chunks) >= 3
    covered: list[int] = []
    for chunk in chunks:
        held = _body_rows(chunk, located.table)
        location = chunk.location
        assert (location.row_start, location.row_end) == (held[0], held[-1])
        assert location.table == 1
        # data row n sits on sheet row n + 3 (title, blank row, header above it)
        expected = f"A{held[0] + 3}:G{held[-1] + 3}"
        assert location.sheet == "Stock" and location.cell_range == expected
        assert location.label() == f"Stock!{expected}"
        covered.extend(held)
    assert covered == list(range(1, 101))


def test_a_pdf_table_chunk_names_its_rows_and_narrows_its_box_to_them() -> None:
    data, rows = senate_expenditure_pdf()
    doc = _ok(extract(data, "application/pdf", "senate.pdf"))
    [located] = extract_tables(doc)
    assert located.table.body == tuple(rows[1:])
    table_box = located.location.bbox
    assert table_box is not None
    chunks = [c for c in _chunks(doc) if c.kind == "table"]
    assert len(chunks) >= 2
    previous_bottom = table_box[3] + 1
    covered: list[int] = []
    for chunk in chunks:
        held = _body_rows(chunk, located.table)
        location = chunk.location
        assert (location.row_start, location.row_end) == (held[0], held[-1])
        assert location.label() == f"p. 1 · table 1 · rows {held[0]}–{held[-1]}"
        box = location.bbox
        assert box is not None
        # inside the table, narrower than it, and below the previous chunk's rows
        assert box[0] == table_box[0] and box[2] == table_box[2]
        assert table_box[1] <= box[1] < box[3] <= table_box[3]
        assert box[3] - box[1] < (table_box[3] - table_box[1]) * 0.8
        assert box[3] < previous_bottom
        previous_bottom = box[1]
        covered.extend(held)
    assert covered == list(range(1, len(rows)))


def test_a_ruled_pdf_table_split_over_chunks_keeps_row_boxes() -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 9)
    rows = [("Code", "Station", "Line", "Passengers")] + [
        (f"C{n:03d}", f"station number {n}", f"line {n % 4}", str(1000 + n * 7))
        for n in range(1, 46)
    ]
    with pdf.table(borders_layout="ALL", line_height=5) as table:
        for row in rows:
            cells = table.row()
            for value in row:
                cells.cell(value)
    doc = _ok(extract(bytes(pdf.output()), "application/pdf", "ruled.pdf"))
    [located] = extract_tables(doc)
    assert located.table.body == tuple(rows[1:])
    assert len(located.table.row_boxes) == len(rows)
    chunks = [c for c in _chunks(doc) if c.kind == "table"]
    assert len(chunks) >= 2
    for chunk in chunks:
        held = _body_rows(chunk, located.table)
        assert (chunk.location.row_start, chunk.location.row_end) == (held[0], held[-1])
        assert chunk.location.bbox is not None and located.location.bbox is not None
        assert chunk.location.bbox != located.location.bbox


def test_extract_tables_numbers_each_table_and_its_data_rows() -> None:
    data, rows = _inventory_xlsx(rows=5)
    doc = _ok(extract(data, XLSX, "stock.xlsx"))
    [located] = extract_tables(doc)
    assert located.number == 1
    assert located.row_numbers() == (0, 1, 2, 3, 4, 5)  # 0: a header row
    assert located.row_location(2) == Location(
        sheet="Stock", cell_range="A5:G5", table=1, row_start=2, row_end=2
    )


def test_a_citation_of_a_row_range_still_verifies_against_the_stored_extraction() -> None:
    data, _ = _inventory_xlsx()
    doc = _ok(extract(data, XLSX, "stock.xlsx"))
    chunk = next(c for c in _chunks(doc) if "SKU-0077" in c.body)
    assert chunk.location.row_start is not None and chunk.location.row_start <= 77
    assert chunk.location.row_end is not None and chunk.location.row_end >= 77
    row = next(line for line in chunk.body.splitlines() if "SKU-0077" in line)
    citation = Citation(
        source_id="s",
        source_version_id="v",
        chunk_id=chunk.chunk_id,
        content_hash=chunk.content_hash,
        title="stock.xlsx",
        location=chunk.location,
        heading_path=chunk.heading_path,
        excerpt=excerpt(row),
        retrieved_at=datetime.now(UTC),
    )
    assert isinstance(verify_citation(citation, doc), CitationVerified)
    # the rows are checked too: the same excerpt cited at other rows is a miss
    elsewhere = replace(citation, location=replace(chunk.location, row_start=1, row_end=20))
    assert verify_citation(elsewhere, doc) == CitationMiss(elsewhere, "excerpt-not-at-location")
    # a citation stored before rows were named reads the whole table, as before
    old = replace(
        citation, location=replace(chunk.location, table=None, row_start=None, row_end=None)
    )
    assert isinstance(verify_citation(old, doc), CitationVerified)


def test_row_fields_round_trip_and_old_records_still_read() -> None:
    old = {"page": 3, "bbox": [1.0, 2.0, 3.0, 4.0]}
    assert Location.from_dict(old) == Location(page=3, bbox=(1.0, 2.0, 3.0, 4.0))
    new = Location(page=3, bbox=(1.0, 2.0, 3.0, 4.0), table=2, row_start=41, row_end=60)
    assert Location.from_dict(new.to_dict()) == new
    assert new.label() == "p. 3 · table 2 · rows 41–60"
    assert Location(page=3, table=2, row_start=7, row_end=7).label() == "p. 3 · table 2 · row 7"
    table = Table(
        rows=(("a", "b"), ("1", "2")),
        row_boxes=((10.0, 20.0), (0.0, 10.0)),
        source_rows=(4, 5),
    )
    block = Block(BlockKind.TABLE, table.to_markdown(), Location(page=1), table=table)
    assert Block.from_dict(block.to_dict()) == block
    old_block = {
        "kind": "table",
        "text": "",
        "location": {"page": 1},
        "table": {"rows": [["a", "b"], ["1", "2"]], "header_rows": 1},
    }
    read = Block.from_dict(old_block)
    assert read.table is not None and read.table.row_boxes == () and read.table.source_rows == ()


def test_labels_without_rows_are_unchanged() -> None:
    assert Location(page=1).label() == "p. 1"
    assert Location(sheet="S", cell_range="A1:B2").label() == "S!A1:B2"
    assert re.fullmatch(r"lines 1-4", Location(line_start=1, line_end=4).label())
