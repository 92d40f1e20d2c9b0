"""PDF text as a reader sees it: words hyphenated across lines, numbered
items, running headers and footers. Every PDF here is drawn by the test."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from fpdf import FPDF

from groundwork.documents import BlockKind, ExtractedDocument
from groundwork.extract import extract


def _ok(result: object) -> ExtractedDocument:
    assert isinstance(result, ExtractedDocument), result
    return result


def _text(doc: ExtractedDocument) -> str:
    return " ".join(b.text for b in doc.blocks)


def _lines_pdf(lines: Sequence[str], gap: float = 0) -> bytes:
    """One page of the lines, one cell each, in 11 pt Helvetica, `gap` mm apart."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    for line in lines:
        pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
        if gap:
            pdf.ln(gap)
    return bytes(pdf.output())


def test_a_word_hyphenated_across_lines_comes_back_whole() -> None:
    """pdfium joins such a word itself and marks the break with U+FFFE, which
    is no character of the text; a hyphen inside a line stays."""
    pdf = _lines_pdf(
        (
            "The committee reviewed the appoint-",
            "ments of the federal witnesses and the",
            "budget for the well-known office.",
        )
    )
    text = _text(_ok(extract(pdf, "application/pdf", "h.pdf")))
    assert "appointments of the federal" in text
    assert "\ufffe" not in text
    assert "well-known" in text


def test_numbered_items_keep_their_numbers_and_bullets_lose_their_glyph() -> None:
    """ "Question 23" is found by its number: an ordinal is part of the item (as
    a DOCX list label is); a bullet glyph is not."""
    pdf = _lines_pdf(
        (
            "Answer every question below.",
            "23. Is legal aid available to children?",
            "24. Is legal aid available to migrants?",
            "b) Only in criminal cases.",
            "- Persons with disabilities",
        ),
        gap=4,
    )
    doc = _ok(extract(pdf, "application/pdf", "q.pdf"))
    items = [b.text for b in doc.blocks if b.kind == BlockKind.LIST_ITEM]
    assert items == [
        "23. Is legal aid available to children?",
        "24. Is legal aid available to migrants?",
        "b) Only in criminal cases.",
        "Persons with disabilities",
    ]


def _paged(header: str | None, footer: str | None, pages: int, heading: bool = True) -> bytes:
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(False)
    for page in range(1, pages + 1):
        pdf.add_page()
        if header is not None:
            pdf.set_font("Helvetica", "", 8)
            pdf.set_xy(10, 8)
            pdf.cell(0, 5, header.format(page=page))
        pdf.set_xy(10, 30)
        if heading:
            pdf.set_font("Helvetica", "B", 16)
            pdf.cell(0, 10, f"Section {page}: replica lag", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(
            0, 6, f"Page {page} body: the storage cluster kept its replicas in step all week. " * 4
        )
        if footer is not None:
            pdf.set_font("Helvetica", "", 8)
            pdf.set_xy(10, 285)
            pdf.cell(0, 5, footer.format(page=page), align="C")
    return bytes(pdf.output())


def test_running_headers_and_page_numbers_are_not_text() -> None:
    """A header repeated in the top margin of every page and a folio in the
    bottom margin are the page's furniture: they would land in the middle of
    the paragraphs that run across pages."""
    data = _paged("Storage Operations Review {page}", "Page {page} of 3", pages=3)
    doc = _ok(extract(data, "application/pdf", "r.pdf"))
    text = _text(doc)
    assert "Storage Operations Review" not in text and "of 3" not in text
    for page in (1, 2, 3):
        assert f"Page {page} body" in text and f"Section {page}: replica lag" in text
    # a bare page number alone in the bottom margin of a one-page document too
    one = _text(_ok(extract(_paged(None, "7-45", pages=1), "application/pdf", "o.pdf")))
    assert "7-45" not in one and "Page 1 body" in one


def test_top_lines_that_differ_from_page_to_page_stay() -> None:
    tops = ["Budget agreed for storage", "Replica lag fell in May", "Travel costs rose again"]
    pdf = FPDF(format="A4")
    for top in tops:
        pdf.add_page()
        pdf.set_font("Helvetica", "", 9)
        pdf.set_xy(10, 8)
        pdf.cell(0, 5, top)
        pdf.set_xy(10, 30)
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, "The storage cluster kept its replicas in step all week. " * 4)
    text = _text(_ok(extract(bytes(pdf.output()), "application/pdf", "m.pdf")))
    assert all(top in text for top in tops)


@pytest.mark.parametrize("mark", ["\x02", "\U0001d306"], ids=["control", "beyond-bmp"])
def test_characters_pdfium_counts_apart_do_not_shift_the_words_after_them(mark: str) -> None:
    """pdfium's page text leaves out a glyph whose code is a control character
    (a U+0002 bullet) and gives a character beyond the BMP as one, while its
    character indices count the first and count the second as two: read by
    index, every box after one belonged to another character, and the table
    below came out wrong."""
    from testbed.pdf_drawing import draw_table, ledger_rows

    rows = ledger_rows(random.Random(5), 8)
    pdf = FPDF(format="letter")
    pdf.add_font("dejavu", "", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
    pdf.add_page()
    for usage in ("ALLOWED: the profile may use the function.", "DENIED: it may not."):
        pdf.set_font("dejavu" if mark > "\uffff" else "Helvetica", "", 10)
        pdf.cell(0, 6, f"{mark * 3} {usage}", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    draw_table(pdf, rows, "NONE", numeric_from=2)
    doc = _ok(extract(bytes(pdf.output()), "application/pdf", "usage.pdf"))
    (table,) = [b.table for b in doc.blocks if b.kind == BlockKind.TABLE]
    assert table is not None and table.rows == rows
    text = _text(doc)
    assert "ALLOWED: the profile may use the function." in text
    assert "\x02" not in text and "\u200b" not in text
    if mark > "\uffff":
        assert mark * 3 in text


def test_a_table_drawn_after_the_text_below_it_is_read_in_its_place() -> None:
    """Reading order is the page's, not the drawing's: a table the content
    stream draws after the paragraph under it still comes before that
    paragraph (and not before a footer the stream draws first)."""
    from testbed.pdf_drawing import draw_table, ledger_rows

    rows = ledger_rows(random.Random(9), 6)
    pdf = FPDF(format="letter")
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    pdf.set_xy(10, 250)
    pdf.cell(0, 6, "Global study on legal aid, annex")
    pdf.set_xy(10, 10)
    pdf.multi_cell(0, 6, "Table 2-1 describes the accounts of the quarter.")
    pdf.set_xy(10, 150)
    pdf.multi_cell(0, 6, "To discover who approved them, read the minutes that follow.")
    pdf.set_xy(10, 40)
    draw_table(pdf, rows, "NONE", numeric_from=2)
    doc = _ok(extract(bytes(pdf.output()), "application/pdf", "order.pdf"))
    kinds = [(b.kind, b.text[:20]) for b in doc.blocks]
    assert kinds[0] == (BlockKind.PARAGRAPH, "Global study on lega")
    assert kinds[1:] == [
        (BlockKind.PARAGRAPH, "Table 2-1 describes "),
        (BlockKind.TABLE, kinds[2][1]),
        (BlockKind.PARAGRAPH, "To discover who appr"),
    ]


def test_a_folio_is_a_number_not_any_word_of_roman_letters() -> None:
    from groundwork.extract.pdf import _FOLIO

    assert all(_FOLIO.match(t) for t in ("7", "xiv", "Page 7 of 9", "7-45", "- 7 -"))
    assert not any(_FOLIO.match(t) for t in ("Civil", "Lid", "dim", "Mild"))
