"""HTML tables keep their row and column spans as spans, with the merged text
in every position it covers, and an infobox of key-value rows is a table
(issue 36); on the shared corpus's HTML pages the tables' rows come out as
docling's reference has them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from groundwork.documents import BlockKind, CellSpan, ExtractedDocument, Table
from groundwork.extract import extract
from testbed.html_tables import PAGE, TABLES

SHARED_HTML = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "documents" / "docling" / "html"
)


def _tables(data: bytes) -> list[Table]:
    result = extract(data, "text/html", "page.html")
    assert isinstance(result, ExtractedDocument)
    return [b.table for b in result.blocks if b.kind is BlockKind.TABLE and b.table is not None]


def test_spans_pivot_labels_and_an_infobox_come_out_on_their_grid() -> None:
    tables = _tables(PAGE.encode())
    assert len(tables) == len(TABLES)
    for table, expected in zip(tables, TABLES, strict=True):
        assert table.rows == expected.rows
        assert table.header_rows == expected.header_rows
        assert table.spans == tuple(CellSpan(*span) for span in expected.spans)


def test_a_row_read_alone_carries_its_rowspan_label() -> None:
    pivot = _tables(PAGE.encode())[1]
    assert [row[:2] for row in pivot.body] == [("2025", "Q1"), ("2025", "Q1"), ("2025", "Q2")]


def test_spans_and_the_grid_are_bounded() -> None:
    page = '<table><tr><td rowspan="999999" colspan="999999">x</td><td>y</td></tr></table>'
    (table,) = _tables(page.encode())
    assert len(table.rows) == 1 and len(table.rows[0]) <= 256
    tall = "<tr>" + '<td rowspan="1000" colspan="256">z</td>' + "</tr>"
    page = "<table>" + tall * 3000 + "</table>"
    (table,) = _tables(page.encode())
    assert len(table.rows) * len(table.rows[0]) <= 200_000


_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


def _row_key(cells: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Cell text without the reference's Markdown (links, emphasis, image
    comments, heading marks) and with straight quotes: markup, not content."""

    def key(cell: str) -> str:
        cell = _LINK.sub(r"\1", cell.replace("<!-- image -->", " ")).translate(_QUOTES)
        cell = re.sub(r"^#+\s|[*_~`]+", " ", cell.strip())
        return " ".join(cell.lower().split())

    return tuple(key(c) for c in cells)


def _reference_rows(markdown: str) -> list[tuple[str, ...]]:
    rows = []
    for line in markdown.splitlines():
        line = line.strip()
        if line.startswith("|") and not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line):
            rows.append(_row_key([c.strip() for c in line.strip("|").split("|")]))
    return rows


@pytest.mark.skipif(not SHARED_HTML.exists(), reason="no shared corpus (../shared/data/documents)")
def test_shared_html_tables_have_the_reference_rows() -> None:
    recalls: dict[str, float] = {}
    for source in sorted(SHARED_HTML.glob("*.html")):
        truth = SHARED_HTML / "groundtruth" / f"{source.name}.md"
        expected = _reference_rows(truth.read_text()) if truth.exists() else []
        if not expected:
            continue
        ours = {_row_key(r) for t in _tables(source.read_bytes()) for r in t.rows}
        recalls[source.name] = sum(1 for r in expected if r in ours) / len(expected)
    assert recalls and sum(recalls.values()) / len(recalls) >= 0.97, recalls
    for name in ("example_04.html", "example_05.html", "example_08.html"):
        assert recalls[name] == 1.0, (name, recalls[name])
