"""PDF text as a reader sees it: words hyphenated across lines, numbered
items, running headers and footers. Every PDF here is drawn by the test."""

from __future__ import annotations

from fpdf import FPDF

from groundwork.documents import BlockKind, ExtractedDocument
from groundwork.extract import extract


def _ok(result: object) -> ExtractedDocument:
    assert isinstance(result, ExtractedDocument), result
    return result


def _text(doc: ExtractedDocument) -> str:
    return " ".join(b.text for b in doc.blocks)


def test_a_word_hyphenated_across_lines_comes_back_whole() -> None:
    """pdfium joins such a word itself and marks the break with U+FFFE, which
    is no character of the text; a hyphen inside a line stays."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    for line in (
        "The committee reviewed the appoint-",
        "ments of the federal witnesses and the",
        "budget for the well-known office.",
    ):
        pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    text = _text(_ok(extract(bytes(pdf.output()), "application/pdf", "h.pdf")))
    assert "appointments of the federal" in text
    assert "\ufffe" not in text
    assert "well-known" in text


def test_numbered_items_keep_their_numbers_and_bullets_lose_their_glyph() -> None:
    """"Question 23" is found by its number: an ordinal is part of the item (as
    a DOCX list label is); a bullet glyph is not."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    for line in (
        "Answer every question below.",
        "23. Is legal aid available to children?",
        "24. Is legal aid available to migrants?",
        "b) Only in criminal cases.",
        "- Persons with disabilities",
    ):
        pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    doc = _ok(extract(bytes(pdf.output()), "application/pdf", "q.pdf"))
    items = [b.text for b in doc.blocks if b.kind == BlockKind.LIST_ITEM]
    assert items == [
        "23. Is legal aid available to children?",
        "24. Is legal aid available to migrants?",
        "b) Only in criminal cases.",
        "Persons with disabilities",
    ]
