"""Office documents as they are (#15): merged and nested tables, Strict OOXML,
chart data, formulas, hidden and very wide sheets, slides' shapes. Every
fixture is generated here, so what a test expects is what it built."""

from __future__ import annotations

import io
import re
import zipfile

import docx
import openpyxl
import openpyxl.comments
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.opc.packuri import PackURI
from docx.opc.part import Part
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.util import Inches

from groundwork.documents import Block, BlockKind, CellSpan, ExtractedDocument, Table
from groundwork.extract import DOCX, PPTX, XLSX, extract
from tests.conftest import shared_data_or_skip


def _ok(result: object) -> ExtractedDocument:
    assert isinstance(result, ExtractedDocument), result
    return result


def _saved(document: docx.document.Document) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _tables(doc: ExtractedDocument) -> list[Block]:
    return [b for b in doc.blocks if b.table is not None]


# --- DOCX tables -----------------------------------------------------------------


def test_docx_merged_cells_are_kept_as_spans_with_text_in_every_covered_cell() -> None:
    document = docx.Document()
    table = document.add_table(rows=3, cols=3)
    for r, row in enumerate((("Region", "", "Lead"), ("North", "40", "Ana"), ("South", "35", ""))):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(0, 0).merge(table.cell(0, 1))  # gridSpan 2
    table.cell(1, 2).merge(table.cell(2, 2))  # vMerge restart + continue
    doc = _ok(extract(_saved(document), DOCX, "merged.docx"))
    [block] = _tables(doc)
    assert block.table is not None
    assert block.table.rows == (
        ("Region", "Region", "Lead"),
        ("North", "40", "Ana"),
        ("South", "35", "Ana"),
    )
    assert set(block.table.spans) == {CellSpan(0, 0, 1, 2), CellSpan(1, 2, 2, 1)}
    # spans survive the stored form (extractions are stored as JSON)
    assert Block.from_dict(block.to_dict()).table == block.table


def test_docx_nested_table_is_a_table_of_its_own_not_text_in_the_outer_cell() -> None:
    document = docx.Document()
    outer = document.add_table(rows=2, cols=2)
    outer.cell(0, 0).text, outer.cell(0, 1).text = "Plan", "Prices"
    outer.cell(1, 0).text = "Basic"
    cell = outer.cell(1, 1)
    cell.text = "See the grid:"
    inner = cell.add_table(rows=2, cols=2)
    for r, row in enumerate((("Seats", "EUR"), ("5", "49"))):
        for c, value in enumerate(row):
            inner.cell(r, c).text = value
    doc = _ok(extract(_saved(document), DOCX, "nested.docx"))
    outer_block, inner_block = _tables(doc)
    assert outer_block.table is not None and inner_block.table is not None
    assert outer_block.table.rows == (("Plan", "Prices"), ("Basic", "See the grid:"))
    assert inner_block.table.rows == (("Seats", "EUR"), ("5", "49"))
    assert inner_block.location.element != outer_block.location.element


def test_docx_single_cell_layout_table_is_unwrapped_into_its_content() -> None:
    document = docx.Document()
    frame = document.add_table(rows=1, cols=1)
    frame.cell(0, 0).text = "Framed introduction"
    inner = frame.cell(0, 0).add_table(rows=2, cols=2)
    for r, row in enumerate((("Tab1", "Tab2"), ("A", "B"))):
        for c, value in enumerate(row):
            inner.cell(r, c).text = value
    doc = _ok(extract(_saved(document), DOCX, "frame.docx"))
    assert [(b.kind, b.text) for b in doc.blocks if b.table is None] == [
        (BlockKind.PARAGRAPH, "Framed introduction")
    ]
    [table] = _tables(doc)
    assert table.table is not None and table.table.rows == (("Tab1", "Tab2"), ("A", "B"))


def test_docx_numbered_paragraphs_carry_the_number_word_draws() -> None:
    document = docx.Document()
    document.add_heading("Steps", 1)
    for text in ("Unplug it", "Wait", "Plug it in"):
        document.add_paragraph(text, style="List Number")
    document.add_paragraph("Keep the receipt", style="List Bullet")
    doc = _ok(extract(_saved(document), DOCX, "steps.docx"))
    assert [(b.kind, b.text) for b in doc.blocks[1:]] == [
        (BlockKind.LIST_ITEM, "1. Unplug it"),
        (BlockKind.LIST_ITEM, "2. Wait"),
        (BlockKind.LIST_ITEM, "3. Plug it in"),
        (BlockKind.LIST_ITEM, "Keep the receipt"),  # a bullet gets no label
    ]


def _checkbox(checked: bool, glyph: str) -> str:
    """A Word 2010 checkbox content control showing `glyph` (whatever the
    author picked as its checked or unchecked symbol)."""
    return (
        f"<w:sdt {nsdecls('w')} "
        'xmlns:w14="http://schemas.microsoft.com/office/word/2010/wordml">'
        '<w:sdtPr><w14:checkbox><w14:checked w14:val="'
        + ("1" if checked else "0")
        + '"/><w14:checkedState w14:val="2714" w14:font="Segoe UI Symbol"/>'
        '<w14:uncheckedState w14:val="2610" w14:font="MS Gothic"/></w14:checkbox></w:sdtPr>'
        f"<w:sdtContent><w:r><w:t>{glyph}</w:t></w:r></w:sdtContent></w:sdt>"
    )


def _legacy_checkbox(checked: bool) -> list[str]:
    """A Word 97 form field checkbox: no glyph in the text at all."""
    state = "<w:checked/>" if checked else '<w:default w:val="0"/>'
    return [
        f'<w:r {nsdecls("w")}><w:fldChar w:fldCharType="begin"><w:ffData><w:name w:val="c"/>'
        f"<w:checkBox><w:sizeAuto/>{state}</w:checkBox></w:ffData></w:fldChar></w:r>",
        f'<w:r {nsdecls("w")}><w:instrText xml:space="preserve"> FORMCHECKBOX </w:instrText></w:r>',
        f'<w:r {nsdecls("w")}><w:fldChar w:fldCharType="end"/></w:r>',
    ]


def test_docx_checkboxes_say_their_state_not_their_glyph() -> None:
    """A checkbox is read from its state: "[x]" or "[ ]" as Markdown writes a
    task, whatever symbol the author chose to draw it with (☒, ✔) and for
    the old form fields too, which draw no character at all."""
    document = docx.Document()
    table = document.add_table(rows=2, cols=1)
    table.cell(0, 0).text = "Breakfast options"
    cell = table.cell(1, 0)
    cell.paragraphs[0].text = "Choose as many as you like:"
    for checked, glyph, label in ((True, "✔", "Orange juice"), (False, "☐", "Tea")):
        paragraph = cell.add_paragraph()
        paragraph._p.append(parse_xml(_checkbox(checked, glyph)))
        paragraph.add_run(f" {label}")
    for checked, label in ((True, "Coffee"), (False, "Milk")):
        paragraph = document.add_paragraph()
        for run in _legacy_checkbox(checked):
            paragraph._p.append(parse_xml(run))
        paragraph.add_run(f" {label}")
    doc = _ok(extract(_saved(document), DOCX, "checkboxes.docx"))
    [block] = _tables(doc)
    assert block.table is not None
    assert block.table.rows[1] == ("Choose as many as you like: [x] Orange juice [ ] Tea",)
    assert [b.text for b in doc.blocks if b.kind == BlockKind.PARAGRAPH] == [
        "[x] Coffee",
        "[ ] Milk",
    ]


def test_docx_numbered_items_in_a_cell_keep_their_numbers() -> None:
    document = docx.Document()
    table = document.add_table(rows=2, cols=1)
    table.cell(0, 0).text = "Procedure"
    cell = table.cell(1, 0)
    cell.paragraphs[0].text = "Before you start:"
    for text in ("Unplug it", "Wait"):
        cell.add_paragraph(text, style="List Number")
    frame = document.add_table(rows=1, cols=1)  # a boxed note: read as its content
    frame.cell(0, 0).paragraphs[0].text = "Then:"
    for text in ("Plug it in", "Switch it on"):
        frame.cell(0, 0).add_paragraph(text, style="List Number")
    doc = _ok(extract(_saved(document), DOCX, "cell-steps.docx"))
    [block] = _tables(doc)
    assert block.table is not None
    assert block.table.rows[1] == ("Before you start: 1. Unplug it 2. Wait",)
    # counted once, in document order, whether in a cell or a frame
    assert [b.text for b in doc.blocks if b.kind == BlockKind.LIST_ITEM] == [
        "3. Plug it in",
        "4. Switch it on",
    ]


_MATH = 'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math"'


def _r(text: str) -> str:
    return f'<m:r><m:t xml:space="preserve">{text}</m:t></m:r>'


def _math(inner: str, display: bool = False) -> str:
    math = f"<m:oMath {_MATH}>{inner}</m:oMath>"
    return f"<m:oMathPara {_MATH}>{math}</m:oMathPara>" if display else math


_QUADRATIC = (  # x = (-b ± √(b²-4ac)) / 2a
    _r("x=")
    + "<m:f><m:num>"
    + _r("-b±")
    + '<m:rad><m:radPr><m:degHide m:val="1"/></m:radPr><m:deg/><m:e>'
    + "<m:sSup><m:e>"
    + _r("b")
    + "</m:e><m:sup>"
    + _r("2")
    + "</m:sup></m:sSup>"
    + _r("-4ac")
    + "</m:e></m:rad></m:num><m:den>"
    + _r("2a")
    + "</m:den></m:f>"
)
_SERIES = (  # Σ_{n=1}^{∞} a_n
    '<m:nary><m:naryPr><m:chr m:val="∑"/></m:naryPr><m:sub>'
    + _r("n=1")
    + "</m:sub><m:sup>"
    + _r("∞")
    + "</m:sup><m:e><m:sSub><m:e>"
    + _r("a")
    + "</m:e><m:sub>"
    + _r("n")
    + "</m:sub></m:sSub></m:e></m:nary>"
)


def test_docx_equations_are_latex_with_their_structure() -> None:
    """Read as run text, the quadratic formula came out as "x=-b±b2-4ac2a" and
    three equations in one paragraph ran together; as LaTeX they keep their
    fractions, roots, scripts and limits: $ inside a sentence or a cell, $$
    standing alone, one per line."""
    document = docx.Document()
    inline = document.add_paragraph("The area is ")
    inline._p.append(
        parse_xml(
            _math(
                _r("A=π")
                + "<m:sSup><m:e>"
                + _r("r")
                + "</m:e><m:sup>"
                + _r("2")
                + "</m:sup></m:sSup>"
            )
        )
    )
    inline.add_run(" for a circle.")
    document.add_paragraph()._p.append(parse_xml(_math(_SERIES, display=True)))
    several = document.add_paragraph()
    for equation in ("a=b", "c=d", "e=f"):
        several._p.append(parse_xml(_math(_r(equation))))
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Name", "Formula"
    table.cell(1, 0).text = "Quadratic"
    table.cell(1, 1).paragraphs[0]._p.append(parse_xml(_math(_QUADRATIC)))
    doc = _ok(extract(_saved(document), DOCX, "equations.docx"))
    texts = [b.text for b in doc.blocks if b.kind == BlockKind.PARAGRAPH]
    assert texts == [
        "The area is $A=\\pi r^{2}$ for a circle.",
        "$$\\sum_{n=1}^{\\infty}a_{n}$$",
        "$$a=b$$\n$$c=d$$\n$$e=f$$",
    ]
    [block] = _tables(doc)
    assert block.table is not None
    assert block.table.rows[1] == ("Quadratic", "$x=\\frac{-b \\pm \\sqrt{b^{2}-4ac}}{2a}$")


def test_docx_equations_nested_past_any_real_depth_are_bounded() -> None:
    deep = _r("x")
    for _ in range(100):  # XML nesting past 256 is refused by the parser already
        deep = f"<m:f><m:num>{deep}</m:num><m:den>{_r('2')}</m:den></m:f>"
    document = docx.Document()
    document.add_paragraph("Deep: ")._p.append(parse_xml(_math(deep)))
    doc = _ok(extract(_saved(document), DOCX, "deep.docx"))
    [paragraph] = [b.text for b in doc.blocks]
    assert paragraph.startswith("Deep: $\\frac{") and paragraph.count("\\frac") <= 64


# --- Strict OOXML --------------------------------------------------------------------

#: Transitional -> Strict, written out by hand from ECMA-376 Part 1 (not derived
#: from the extractor's own mapping, so the test can catch a wrong one).
_TO_STRICT = {
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main": "http://purl.oclc.org/ooxml/wordprocessingml/main",
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument": "http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument",
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/extended-properties": "http://purl.oclc.org/ooxml/officeDocument/relationships/extendedProperties",
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships": "http://purl.oclc.org/ooxml/officeDocument/relationships",
    "http://schemas.openxmlformats.org/officeDocument/2006/extended-properties": "http://purl.oclc.org/ooxml/officeDocument/extendedProperties",
    "http://schemas.openxmlformats.org/officeDocument/2006/math": "http://purl.oclc.org/ooxml/officeDocument/math",
    "http://schemas.openxmlformats.org/drawingml/2006/main": "http://purl.oclc.org/ooxml/drawingml/main",
    "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing": "http://purl.oclc.org/ooxml/drawingml/wordprocessingDrawing",
}


def _as_strict(data: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    pattern = re.compile("|".join(re.escape(k) for k in sorted(_TO_STRICT, key=len, reverse=True)))
    with zipfile.ZipFile(out, "w") as target:
        for entry in source.infolist():
            payload = source.read(entry)
            if entry.filename.endswith((".xml", ".rels")):
                payload = pattern.sub(lambda m: _TO_STRICT[m.group(0)], payload.decode()).encode()
            target.writestr(entry.filename, payload)
    return out.getvalue()


def test_strict_ooxml_docx_is_read_like_transitional() -> None:
    document = docx.Document()
    document.add_heading("Strict policy", level=1)
    document.add_paragraph("Saved as Strict Open XML.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Key", "Value"
    table.cell(1, 0).text, table.cell(1, 1).text = "mode", "strict"
    strict = _as_strict(_saved(document))
    assert b"purl.oclc.org/ooxml/wordprocessingml/main" in zipfile.ZipFile(io.BytesIO(strict)).read(
        "word/document.xml"
    )
    doc = _ok(extract(strict, DOCX, "strict.docx"))
    assert [(b.kind, b.text) for b in doc.blocks if b.table is None] == [
        (BlockKind.HEADING, "Strict policy"),
        (BlockKind.PARAGRAPH, "Saved as Strict Open XML."),
    ]
    assert _tables(doc)[0].table == Table(rows=(("Key", "Value"), ("mode", "strict")))


def test_strict_ooxml_docx_from_word_is_read() -> None:
    path = shared_data_or_skip("documents", "docling", "docx", "Strict.docx")
    doc = _ok(extract(path.read_bytes(), DOCX, "Strict.docx"))
    assert doc.blocks


# --- charts ----------------------------------------------------------------------------

_DUCKS = CategoryChartData()
_DUCKS.categories = ["2019", "2020", "2021"]
_DUCKS.add_series("Freshwater", (120, 130.5, 150))
_DUCKS.add_series("Saltwater", (80, 95, 110))
_DUCK_ROWS = (
    ("", "Freshwater", "Saltwater"),
    ("2019", "120", "80"),
    ("2020", "130.5", "95"),
    ("2021", "150", "110"),
)


def _chart_deck() -> bytes:
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Duck survey"
    frame = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1.5), Inches(6), Inches(4), _DUCKS
    )
    frame.chart.has_title = True
    frame.chart.chart_title.text_frame.text = "Ducks by year"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def test_pptx_chart_numbers_become_a_table_labelled_as_chart_data_on_its_slide() -> None:
    doc = _ok(extract(_chart_deck(), PPTX, "ducks.pptx"))
    [chart] = _tables(doc)
    assert chart.table is not None and chart.table.rows == _DUCK_ROWS
    assert chart.location.slide == 1 and chart.location.label() == "slide 1 chart 1"
    label = doc.blocks[doc.blocks.index(chart) - 1]
    assert label.text == "Ducks by year — bar chart data" and label.location == chart.location


def test_docx_chart_numbers_become_a_table_labelled_as_chart_data() -> None:
    chart_xml = zipfile.ZipFile(io.BytesIO(_chart_deck())).read("ppt/charts/chart1.xml")
    document = docx.Document()
    document.add_paragraph("Observed ducks:")
    paragraph = document.add_paragraph()
    part = Part(
        PackURI("/word/charts/chart1.xml"),
        "application/vnd.openxmlformats-officedocument.drawingml.chart+xml",
        chart_xml,
        document.part.package,
    )
    rid = document.part.relate_to(part, RT.CHART)
    paragraph._p.append(
        parse_xml(
            f"<w:r {nsdecls('w', 'wp', 'a', 'r')}><w:drawing><wp:inline>"
            '<wp:extent cx="5486400" cy="3200400"/><wp:docPr id="1" name="Chart 1"/>'
            '<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/chart">'
            f'<c:chart xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart" r:id="{rid}"/>'
            "</a:graphicData></a:graphic></wp:inline></w:drawing></w:r>"
        )
    )
    document.add_paragraph("After the chart.")
    doc = _ok(extract(_saved(document), DOCX, "ducks.docx"))
    texts = [b.text for b in doc.blocks if b.table is None]
    assert texts == ["Observed ducks:", "Ducks by year — bar chart data", "After the chart."]
    [chart] = _tables(doc)
    assert chart.table is not None and chart.table.rows == _DUCK_ROWS
    assert chart.location.part == "chart 1" and chart.location.element is not None


def test_a_chart_without_data_costs_the_chart_not_the_document() -> None:
    data = _chart_deck()
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for entry in source.infolist():
            payload = source.read(entry)
            if entry.filename == "ppt/charts/chart1.xml":  # its series caches are gone
                payload = re.sub(rb"<c:plotArea>.*</c:plotArea>", b"", payload, flags=re.S)
            target.writestr(entry.filename, payload)
    doc = _ok(extract(out.getvalue(), PPTX, "ducks.pptx"))
    assert not _tables(doc)
    assert any(b.text == "Duck survey" for b in doc.blocks)
    assert any("chart" in w for w in doc.warnings)


# --- XLSX ------------------------------------------------------------------------------


def _book(workbook: openpyxl.Workbook) -> bytes:
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def test_xlsx_formulas_without_saved_results_show_the_formula_and_say_so() -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Budget"
    for row in (("Item", "Cost"), ("Servers", 120), ("Licences", 30), ("Total", "=SUM(B2:B3)")):
        sheet.append(row)
    doc = _ok(extract(_book(workbook), XLSX, "budget.xlsx"))
    [table] = _tables(doc)
    assert table.table is not None and table.table.rows[-1] == ("Total", "=SUM(B2:B3)")
    assert any("1 formula cells have no saved result" in w for w in doc.warnings)


def test_xlsx_hidden_sheets_are_extracted_marked_and_reported() -> None:
    workbook = openpyxl.Workbook()
    workbook.active.title = "Prices"
    workbook.active.append(("Plan", "Rate"))
    workbook.active.append(("Basic", 10))
    hidden = workbook.create_sheet("Rates")
    hidden.append(("Code", "Factor"))
    hidden.append(("B", 1.2))
    hidden.sheet_state = "hidden"
    doc = _ok(extract(_book(workbook), XLSX, "prices.xlsx"))
    rates = [b for b in doc.blocks if b.location.sheet == "Rates"]
    assert rates and all(b.location.part == "hidden sheet" for b in rates)
    assert not any(b.location.part for b in doc.blocks if b.location.sheet == "Prices")
    assert any("'Rates' is hidden" in w for w in doc.warnings)


def test_xlsx_side_by_side_tables_merged_title_and_comments_keep_their_ranges() -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Report"
    sheet["A1"] = "Reading list"
    sheet.merge_cells("A1:C1")
    for r, row in enumerate((("#", "Title", "Year"), ("1", "Dune", "1965")), start=2):
        for c, value in enumerate(row, start=1):
            sheet.cell(r, c, value)
    for r, pair in enumerate((("Region", "Sales"), ("North", "40")), start=2):
        for c, value in enumerate(pair, start=5):  # column D stays empty: another table
            sheet.cell(r, c, value)
    sheet["F3"].comment = openpyxl.comments.Comment("Preliminary figure", "Ana")
    doc = _ok(extract(_book(workbook), XLSX, "report.xlsx"))
    located = [(b.kind, b.text, b.location.cell_range) for b in doc.blocks if b.table is None]
    assert (BlockKind.PARAGRAPH, "Reading list", "A1:C1") in located
    assert (BlockKind.PARAGRAPH, "[comment on F3 by Ana]: Preliminary figure", "F3") in located
    books, sales = _tables(doc)
    assert books.location.cell_range == "A2:C3" and sales.location.cell_range == "E2:F3"
    assert books.table is not None and books.table.rows == (
        ("#", "Title", "Year"),
        ("1", "Dune", "1965"),
    )
    assert sales.table is not None and sales.table.rows == (("Region", "Sales"), ("North", "40"))


def test_xlsx_merged_cells_inside_a_table_are_spans() -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    for row in (("Team", "People"), ("Storage", 12), (None, 7)):
        sheet.append(row)
    sheet.merge_cells("A2:A3")
    doc = _ok(extract(_book(workbook), XLSX, "teams.xlsx"))
    [table] = _tables(doc)
    assert table.table is not None
    assert table.table.rows == (("Team", "People"), ("Storage", "12"), ("Storage", "7"))
    assert table.table.spans == (CellSpan(1, 0, 2, 1),)


def test_xlsx_a_very_wide_sheet_is_cut_with_a_visible_note() -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Wide"
    for r in range(1, 3):
        for c in range(1, 401):
            sheet.cell(r, c, f"v{r}-{c}")
    doc = _ok(extract(_book(workbook), XLSX, "wide.xlsx"))
    [table] = _tables(doc)
    assert table.table is not None and len(table.table.rows[0]) == 256
    assert table.location.cell_range == "A1:IV2"
    assert doc.truncated and any("400 columns; only the first 256" in w for w in doc.warnings)


def test_xlsx_a_chart_without_cached_numbers_is_reported_not_invented() -> None:
    from openpyxl.chart import BarChart, Reference

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    for row in (("Year", "Ducks"), (2019, 120), (2020, 130)):
        sheet.append(row)
    chart = BarChart()
    chart.add_data(Reference(sheet, min_col=2, min_row=1, max_row=3), titles_from_data=True)
    sheet.add_chart(chart, "D2")  # openpyxl writes references without cached values
    doc = _ok(extract(_book(workbook), XLSX, "ducks.xlsx"))
    assert len(_tables(doc)) == 1
    assert any("no data could be read from chart 1" in w for w in doc.warnings)


# --- PPTX reading order ----------------------------------------------------------------


def test_pptx_shapes_are_read_top_to_bottom_then_left_to_right_and_untitled_slides_get_no_heading() -> (
    None
):
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])  # blank: no title
    for text, left, top in (
        ("Footer note", 1, 6),
        ("Right column", 5, 2),
        ("Left column", 1, 2.05),
        ("Banner", 1, 0.5),
    ):
        box = slide.shapes.add_textbox(Inches(left), Inches(top), Inches(3), Inches(1))
        box.text_frame.text = text
    buffer = io.BytesIO()
    deck.save(buffer)
    doc = _ok(extract(buffer.getvalue(), PPTX, "order.pptx"))
    assert [b.text for b in doc.blocks] == ["Banner", "Left column", "Right column", "Footer note"]
    assert all(b.kind == BlockKind.PARAGRAPH and b.location.slide == 1 for b in doc.blocks)
