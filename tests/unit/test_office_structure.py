"""Office documents as they are (#15): merged and nested tables, Strict OOXML,
chart data, formulas, hidden and very wide sheets, slides' shapes. Every
fixture is generated here, so what a test expects is what it built."""

from __future__ import annotations

import io
import re
import zipfile

import docx
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
from groundwork.extract import DOCX, PPTX, extract
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
