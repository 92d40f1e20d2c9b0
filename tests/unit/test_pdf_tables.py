"""PDF tables as they are on the page, and OCR only where a page has no text.

Every PDF here is drawn by the test (testbed/table_pdfs.py with fpdf2): the rows
it was drawn from are the ground truth."""

from __future__ import annotations

import io
import random
import shutil
from collections import Counter

import pytest
from fpdf import FPDF

from groundwork.chunking import ChunkingPolicy, chunk_blocks
from groundwork.documents import BlockKind, ExtractedDocument
from groundwork.extract import extract
from groundwork.reading import extract_tables
from testbed import documents as make
from testbed.table_pdfs import GeneratedPdf, generated_corpus, senate_expenditure_pdf
from tests.fakes import ScriptedOcr

CORPUS = {generated.name: generated for generated in generated_corpus()}


def _ok(result: object) -> ExtractedDocument:
    assert isinstance(result, ExtractedDocument), result
    return result


def _cells(rows: tuple[tuple[str, ...], ...] | list[tuple[str, ...]]) -> Counter[str]:
    return Counter(" ".join(c.lower().split()) for row in rows for c in row if c.strip())


def test_a_borderless_senate_expenditure_report_is_a_table_with_searchable_rows() -> None:
    data, rows = senate_expenditure_pdf()
    doc = _ok(extract(data, "application/pdf", "senate-expenditures.pdf"))

    tables = extract_tables(doc)
    assert len(tables) == 1
    table = tables[0]
    assert table.location.page == 1 and table.location.bbox is not None
    assert table.table.header == (rows[0],)
    assert len(table.table.rows) == 41 and {len(r) for r in table.table.rows} == {7}
    assert (
        "S2015040177",
        "04/21/15",
        "3/21",
        "3/21",
        "UNITED AIRLINES",
        "AIRFARE",
        "1,482.60",
    ) in (table.table.body)
    # the header row is not mistaken for a heading, nor the rows for a paragraph
    assert not [b for b in doc.blocks if b.kind == BlockKind.HEADING and "Payee" in b.text]
    assert not [b for b in doc.blocks if b.kind == BlockKind.PARAGRAPH and "AIRFARE" in b.text]

    chunks = chunk_blocks(
        doc.blocks,
        tenant_id="t",
        source_id="s",
        version_id="v",
        policy=ChunkingPolicy(max_tokens=200),
    )
    airfare = [c for c in chunks if "3/21 | 3/21 | UNITED AIRLINES | AIRFARE | 1,482.60" in c.body]
    assert len(airfare) == 1
    assert airfare[0].kind == "table"
    assert (
        "| Document No. | Date Posted | Start Date | End Date | Payee | Description | Amount |"
        in (airfare[0].body)
    )
    assert airfare[0].location.page == 1


@pytest.mark.parametrize("name", ["prose", "two-column-prose", "two-column-justified", "lists"])
def test_pages_without_a_table_yield_none_and_keep_their_text(name: str) -> None:
    generated = CORPUS[name]
    doc = _ok(extract(generated.data, "application/pdf", f"{name}.pdf"))
    assert not [b for b in doc.blocks if b.kind == BlockKind.TABLE]
    assert sum(len(b.text) for b in doc.blocks) > 3000  # the prose is still there, as text


def test_a_two_column_prose_page_is_not_a_table() -> None:
    """Two columns of prose line up like a two-column table (the gutter is a
    gap on every line): drawn here as one page of left-aligned columns."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 10)
    sentence = "The committee reviewed the budget and agreed that the replica costs rose. "
    with pdf.text_columns(ncols=2, gutter=10) as columns:
        for n in range(8):
            columns.write(f"{n + 1}. " + sentence * 4 + "\n\n")
    doc = _ok(extract(bytes(pdf.output()), "application/pdf", "columns.pdf"))
    assert [b.kind for b in doc.blocks if b.kind == BlockKind.TABLE] == []
    assert "agreed that the replica costs rose" in " ".join(b.text for b in doc.blocks)


@pytest.mark.parametrize(
    "name", [g.name for g in generated_corpus() if g.tables and g.name != "senate-expenditures"]
)
def test_generated_tables_come_out_with_their_cells(name: str) -> None:
    """Ruled, borderless, header-rule-only, wrapped cells, a spanning header:
    cells recall >= 0.8 at precision >= 0.9 against the rows they were drawn from."""
    generated: GeneratedPdf = CORPUS[name]
    doc = _ok(extract(generated.data, "application/pdf", f"{name}.pdf"))
    tables = extract_tables(doc)
    assert [t.location.page for t in tables] == [t.page for t in generated.tables]
    truth = _cells([row for t in generated.tables for row in t.rows])
    ours = _cells([row for t in tables for row in t.table.rows])
    common = sum((truth & ours).values())
    assert common / sum(truth.values()) >= 0.8
    assert common / sum(ours.values()) >= 0.9
    for table, expected in zip(tables, generated.tables, strict=True):
        assert table.table.header_rows == expected.header_rows
        assert table.table.header[-1] == expected.rows[expected.header_rows - 1]
    # no table text left behind as a paragraph
    paragraphs = " ".join(b.text for b in doc.blocks if b.kind == BlockKind.PARAGRAPH)
    assert generated.tables[0].rows[2][0] not in paragraphs.split()


def _mixed_text_and_scans() -> bytes:
    """Text, scan, text with a picture, scan: letter-size text pages, scans at
    the size of their images (so the OCR provider can tell them apart)."""
    scan = make.text_image(make.SCAN_LINES)
    logo = make.png(make.text_image(["LOGO"], size=(300, 120)))
    pdf = FPDF(unit="pt", format="letter")
    for page in range(4):
        if page % 2:
            pdf.add_page(format=(scan.width * 72 / 200, scan.height * 72 / 200))
            pdf.image(io.BytesIO(make.png(scan)), x=0, y=0, w=pdf.w, h=pdf.h)
            continue
        pdf.add_page(format="letter")
        pdf.set_font("Helvetica", "", 11)
        if page == 2:
            pdf.image(io.BytesIO(logo), x=40, y=40, w=90)
            pdf.set_y(100)
        pdf.multi_cell(0, 14, f"Text page {page + 1}: the storage cluster was healthy all week.")
    return bytes(pdf.output())


def test_a_pdf_of_text_and_scanned_pages_ocrs_only_the_scans() -> None:
    ocr = ScriptedOcr()
    doc = _ok(extract(_mixed_text_and_scans(), "application/pdf", "mixed.pdf", ocr=ocr))
    # rendered at 300 DPI: a scan page is 1700x900 px at 200 DPI -> 2550x1350; letter is 2550x3300
    assert ocr.seen == [(2550, 1350), (2550, 1350)]
    texts = {b.location.page: b.text for b in doc.blocks}
    assert "Text page 1" in texts[1] and "Text page 3" in texts[3]
    assert not doc.warnings


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract-ocr is not installed")
def test_the_scanned_pages_text_comes_from_tesseract_on_those_pages_only() -> None:
    from resources.models.ocr_tesseract import TesseractOcr

    class Counting(TesseractOcr):
        calls = 0

        def recognize(self, image: bytes):  # type: ignore[no-untyped-def]
            Counting.calls += 1
            return super().recognize(image)

    doc = _ok(extract(_mixed_text_and_scans(), "application/pdf", "mixed.pdf", ocr=Counting()))
    assert Counting.calls == 2
    by_page: dict[int, list[str]] = {}
    for block in doc.blocks:
        by_page.setdefault(block.location.page or 0, []).append(block.text)
    assert sorted(by_page) == [1, 2, 3, 4]
    for page in (2, 4):
        assert "replica fell behind the primary" in " ".join(by_page[page])
        assert all(b.confidence is not None for b in doc.blocks if b.location.page == page)
    for page in (1, 3):
        assert f"Text page {page}" in " ".join(by_page[page])
        assert all(b.confidence is None for b in doc.blocks if b.location.page == page)


def test_a_spanning_header_keeps_both_header_rows_in_every_chunk() -> None:
    generated = CORPUS["spanning-borderless"]
    doc = _ok(extract(generated.data, "application/pdf", "spanning.pdf"))
    (table,) = [b for b in doc.blocks if b.kind == BlockKind.TABLE]
    assert table.table is not None and table.table.header_rows == 2
    assert table.table.header[0] == ("", "", "Budget", "", "Actual")  # over the columns it spans
    chunks = chunk_blocks(
        [table], tenant_id="t", source_id="s", version_id="v", policy=ChunkingPolicy(max_tokens=60)
    )
    assert len(chunks) > 1
    for chunk in chunks:
        lines = chunk.body.splitlines()
        assert "Budget" in lines[0] and lines[2] == "| Department | 2025 | 2026 | 2025 | 2026 |"


def test_a_table_of_contents_is_a_two_column_table_without_a_header() -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 14)
    pdf.cell(0, 10, "Contents", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)
    entries = [("Introduction", "1"), ("Security fundamentals", "2"), ("Row permissions", "14")]
    entries += [("Column masks", "26"), ("Appendix", "xiv")]
    for title, page in entries:
        y = pdf.get_y()
        pdf.set_xy(20, y)
        pdf.cell(150, 6, title + " " + ". " * int((150 - pdf.get_string_width(title)) / 3.2))
        pdf.set_xy(175, y)
        pdf.cell(15, 6, page, align="R", new_x="LMARGIN", new_y="NEXT")
    doc = _ok(extract(bytes(pdf.output()), "application/pdf", "contents.pdf"))
    tables = extract_tables(doc)
    assert len(tables) == 1 and tables[0].table.header_rows == 0
    rows = tables[0].table.rows
    assert [r[1] for r in rows] == [page for _, page in entries]
    assert all(r[0].startswith(title + " . .") for r, (title, _) in zip(rows, entries, strict=True))


def test_the_lam_alef_ligature_comes_back_in_logical_order() -> None:
    """pdfium writes the ligature as alef then lam; after the article's alef
    that order is never a word, while "ألف" (thousand) must stay as it is."""
    from groundwork.extract.pdf import _LAM_ALEF, _lam_first

    assert _LAM_ALEF.sub(_lam_first, "األهداف اإلنسان کاالی") == "الأهداف الإنسان کالای"
    assert _LAM_ALEF.sub(_lam_first, "ألف الأمن") == "ألف الأمن"


def test_a_ruled_group_header_is_a_merged_cell_over_its_columns() -> None:
    from groundwork.documents import CellSpan

    generated = CORPUS["spanning-ruled"]
    doc = _ok(extract(generated.data, "application/pdf", "spanning.pdf"))
    (table,) = [b.table for b in doc.blocks if b.kind == BlockKind.TABLE]
    assert table is not None and table.header_rows == 2
    assert table.rows[0] == ("", "Budget", "Budget", "Actual", "Actual")
    assert table.spans == (CellSpan(0, 1, 1, 2), CellSpan(0, 3, 1, 2))
    assert table.rows[1] == generated.tables[0].rows[1]


@pytest.mark.parametrize(
    "name",
    [
        "ledger-internal-rules",
        "projects-internal-rules",
        "ledger-column-rules",
        "projects-column-rules",
    ],
)
def test_partly_ruled_tables_keep_every_column_and_row(name: str) -> None:
    """Rules only between the cells (no outer frame: the outer columns have no
    drawn side), or column rules without row rules (every row in one drawn
    cell): the rows come out exactly as drawn, wrapped cells joined."""
    generated = CORPUS[name]
    doc = _ok(extract(generated.data, "application/pdf", f"{name}.pdf"))
    (table,) = [b.table for b in doc.blocks if b.kind == BlockKind.TABLE]
    assert table is not None
    assert table.rows == generated.tables[0].rows
    assert table.header_rows == 1


def test_a_wrapped_first_column_under_column_rules_stays_in_its_row() -> None:
    """Column rules, no row rules, cells set at the top (the Federal Register's
    cost tables): a label wrapping onto a line of its own is that row's label,
    not a row of its own."""
    rows = (
        ("Action", "Labor cost", "Parts cost", "Cost per product"),
        ("FCC OPS installation", "1 work-hour", "$0", "$85"),
        ("AFM revisions", "1 work-hour", "$0", "$85"),
        ("MDS installation and verification, INOP marker removal", "1 work-hour", "$0", "$85"),
        ("Stabilizer wiring change", "2 work-hours", "$10", "$180"),
    )
    pdf = FPDF(format="letter")
    pdf.add_page()
    pdf.set_font("Helvetica", "", 10)
    with pdf.table(
        borders_layout="NO_HORIZONTAL_LINES",
        col_widths=(45, 35, 30, 35),
        width=145,
        v_align="TOP",
        line_height=5,
        first_row_as_headings=True,
    ) as table:
        for row in rows:
            cells = table.row()
            for value in row:
                cells.cell(value)
    doc = _ok(extract(bytes(pdf.output()), "application/pdf", "costs.pdf"))
    (table,) = [b.table for b in doc.blocks if b.kind == BlockKind.TABLE]
    assert table is not None and table.rows == rows


def test_two_tables_of_one_width_on_a_page_stay_two() -> None:
    """Completing the frame of a table ruled only inside must not join it to
    another table of the same width further down the page."""
    from testbed.pdf_drawing import draw_table, ledger_rows, new_pdf

    rng = random.Random(7)
    first, second = ledger_rows(rng, 6), ledger_rows(rng, 4)
    pdf = new_pdf()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 10)
    pdf.multi_cell(0, 5, "Quarterly figures by account, then the summary.")
    draw_table(pdf, first, "INTERNAL", numeric_from=2)
    pdf.ln(12)
    pdf.multi_cell(0, 5, "Summary of the accounts above.")
    draw_table(pdf, second, "ALL", numeric_from=2)
    doc = _ok(extract(bytes(pdf.output()), "application/pdf", "two.pdf"))
    tables = [b.table for b in doc.blocks if b.kind == BlockKind.TABLE and b.table is not None]
    assert [t.rows for t in tables] == [first, second]


def _key_value_pdf(rows: list[tuple[str, str]], font: str | None = None) -> bytes:
    """A ruled two-column form table whose label cells are shaded line by
    line, each line's fill set 2 mm inside the cell's side rules (the fills'
    sides cross the row rules: slivers of "columns"; a two-line label's fills
    meet between its lines: a row split in two). A label's lines are split
    at "/". Hebrew is written in visual order (fpdf2 does not reorder
    without a shaping engine), as a PDF holds it."""

    def visual(text: str) -> str:
        return text[::-1] if any("\u0590" <= c <= "\u05ff" for c in text) else text

    pdf = FPDF(format="A4")
    if font is not None:
        pdf.add_font("body", "", font)
    pdf.add_page()
    pdf.set_font("body" if font else "Helvetica", "", 10)
    left, middle, right, line = 20.0, 90.0, 180.0, 7.0
    y = top = 30.0
    for label, value in rows:
        lines = label.split("/")
        for k, text in enumerate(lines):
            pdf.set_fill_color(225, 225, 240)
            pdf.rect(middle + 2, y + k * line, right - middle - 4, line, style="F")
            pdf.set_xy(middle + 3, y + k * line + 1)
            pdf.cell(right - middle - 6, 5, visual(text), align="R")
        pdf.set_xy(left + 2, y + 1)
        pdf.cell(middle - left - 4, 5, visual(value), align="R")
        pdf.line(left, y, right, y)
        y += line * len(lines)
    pdf.line(left, y, right, y)
    for x in (left, middle, right):
        pdf.line(x, top, x, y)
    return bytes(pdf.output())


def test_shading_set_inside_ruled_cells_makes_no_columns() -> None:
    rows = [
        ("Standard name", "Continuous cast billets"),
        ("National standard number", "20300"),
        ("Issuing authority", ""),  # a form's fields left empty
        ("Date documents submitted", ""),
        ("How the base price is set/after admission", "World prices"),
        ("Date of admission", "1403/10/04"),
    ]
    doc = _ok(extract(_key_value_pdf(rows), "application/pdf", "form.pdf"))
    (table,) = [b.table for b in doc.blocks if b.kind == BlockKind.TABLE]
    assert table is not None
    assert table.rows == tuple((value, label.replace("/", " ")) for label, value in rows)


def test_a_right_to_left_table_reads_its_columns_from_the_right() -> None:
    """In a Hebrew or Arabic document the first column is the rightmost: the
    label reads before its value, as the page is read."""
    rows = [
        ("שם התקן", "מטילים יצוקים"),
        ("מספר התקן", "20300"),
        ("רשות מנפיקה", "מכון התקנים"),
        ("תאריך הגשה", "1403/09/19"),
    ]
    data = _key_value_pdf(rows, font="/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
    doc = _ok(extract(data, "application/pdf", "form-he.pdf"))
    (table,) = [b.table for b in doc.blocks if b.kind == BlockKind.TABLE]
    assert table is not None
    assert [tuple(" ".join(c.split()) for c in row) for row in table.rows] == rows


def test_boxes_of_prose_drawn_as_a_grid_are_no_table() -> None:
    """A cover or a brochure lays its paragraphs out in ruled boxes: the
    lattice finds a grid, but cells holding paragraphs are layout, not data."""
    rng = random.Random(11)
    pdf = FPDF(format="letter")
    pdf.add_page()
    pdf.set_font("Helvetica", "", 9)
    texts = []
    pdf.rect(15, 20, 180, 160)
    pdf.line(105, 20, 105, 180)
    pdf.line(15, 100, 195, 100)
    for row in range(2):
        for column in range(2):
            x, y = 15 + column * 90, 20 + row * 80
            pdf.set_xy(x + 3, y + 3)
            text = " ".join(
                " ".join(
                    rng.choice(("the", "storage", "replica", "policy", "audit", "budget"))
                    for _ in range(12)
                ).capitalize()
                + "."
                for _ in range(6)
            )
            texts.append(text)
            pdf.multi_cell(84, 4.5, text)
    doc = _ok(extract(bytes(pdf.output()), "application/pdf", "boxes.pdf"))
    assert [b for b in doc.blocks if b.kind == BlockKind.TABLE] == []
    assert all(text[:40] in " ".join(b.text for b in doc.blocks) for text in texts)
