"""Borderless and ruled tables whose cells wrap onto one to three lines come
out one row per row of the table (issue 36: each wrapped line used to be a
row of its own), and pages of prose laid out like columns give no table."""

from __future__ import annotations

import pytest

from groundwork.documents import BlockKind, ExtractedDocument
from groundwork.extract import extract
from testbed.table_pdfs import GeneratedPdf
from testbed.wrapped_tables import Found, score, wrapped_corpus

CORPUS = {generated.name: generated for generated in wrapped_corpus()}
TABLES = [name for name, generated in CORPUS.items() if generated.tables]
PROSE = [name for name, generated in CORPUS.items() if not generated.tables]


def _tables(generated: GeneratedPdf) -> Found:
    result = extract(generated.data, "application/pdf", f"{generated.name}.pdf")
    assert isinstance(result, ExtractedDocument)
    return [
        (b.location.page or 0, [list(r) for r in b.table.rows])
        for b in result.blocks
        if b.kind is BlockKind.TABLE and b.table is not None
    ]


@pytest.mark.parametrize("name", TABLES)
def test_wrapped_cells_stay_in_their_row(name: str) -> None:
    generated = CORPUS[name]
    recall, precision, false_tables = score(generated, _tables(generated))
    assert recall is not None and precision is not None
    assert recall >= 0.95 and precision >= 0.99, (recall, precision)
    assert false_tables == 0


@pytest.mark.parametrize("name", PROSE)
def test_prose_with_hanging_labels_is_no_table(name: str) -> None:
    generated = CORPUS[name]
    assert _tables(generated) == []


def test_a_multi_page_report_is_a_table_on_every_page_with_its_header() -> None:
    generated = CORPUS["expense-report-multipage-middle"]
    found = _tables(generated)
    assert [page for page, _ in found] == [t.page for t in generated.tables]
    header = [c.lower() for c in generated.tables[0].rows[0]]
    assert all([c.lower() for c in rows[0]] == header for _, rows in found)


@pytest.mark.parametrize("name", ["expenses-middle-spaced", "expense-report-multipage"])
def test_prose_beside_a_smaller_table_is_prose_not_headings(name: str) -> None:
    generated = CORPUS[name]
    result = extract(generated.data, "application/pdf", f"{name}.pdf")
    assert isinstance(result, ExtractedDocument)
    headings = [b.text for b in result.blocks if b.kind is BlockKind.HEADING]
    assert headings == [name.replace("-", " ").title()]
