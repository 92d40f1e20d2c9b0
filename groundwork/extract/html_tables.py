"""An HTML <table> laid out on its grid, as a browser draws it: a cell with
rowspan or colspan covers the positions below and beside it, its text is
repeated in each (a row read alone is whole) and the merge kept as a
CellSpan, as DOCX and ruled PDF tables keep theirs. Laying cells out one
after another instead put each row's cells under the wrong headers after a
rowspan (issue 36: cells 0.875 on a page of spans and an infobox).

An infobox (a title over key-value rows, a <th> per key) is a table like any
other: its title row is the header, each key and value a row; key-value rows
with no title have no header row (the first key is not a column's label). A row whose
only cells open a rowspan, the rest of the row blank, is a pivot table's
group label: the label goes with the rows it spans and the blank row goes.
Text in a cell keeps its lists' markers and its images' alternative text.

Bounded: at most MAX_COLUMNS columns, MAX_SPAN rows or columns a cell, and
MAX_CELLS grid positions a table (rows past that are left out).
"""

from __future__ import annotations

from typing import Any

from groundwork.documents import CellSpan, Table

MAX_COLUMNS = 256
MAX_SPAN = 1_000
MAX_CELLS = 200_000


#: a non-breaking hyphen is a hyphen to a reader and to a search ("water-screw")
HYPHENS = str.maketrans({"\u2010": "-", "\u2011": "-"})


def clean(text: str) -> str:
    return " ".join(text.translate(HYPHENS).split())


def _parts(node: Any, out: list[str]) -> None:
    for child in node.iter(include_text=True):
        tag = child.tag
        if tag == "-text":
            out.append(child.text(deep=False) or "")
        elif tag == "img":
            out.append(f" {child.attributes.get('alt') or ''} ")
        elif tag in ("ul", "ol"):
            for n, item in enumerate((c for c in child.iter() if c.tag == "li"), 1):
                out.append(f" {n}. " if tag == "ol" else " - ")
                _parts(item, out)
        elif tag == "br":
            out.append(" ")
        elif tag != "-comment":
            out.append(" ")
            _parts(child, out)
            out.append(" ")


def cell_text(node: Any) -> str:
    """A cell's text: lists with their markers, images by their alt text."""
    out: list[str] = []
    _parts(node, out)
    return clean("".join(out))


def _span(value: str | None) -> int:
    value = (value or "1").strip()
    return max(1, min(int(value), MAX_SPAN)) if value.isdigit() else 1


class _Grid:
    """Positions filled row by row; a spanning cell fills ahead of the cursor."""

    def __init__(self) -> None:
        self.text: dict[tuple[int, int], str] = {}
        self.extent: dict[tuple[int, int], tuple[int, int]] = {}
        self.columns = 0

    def place(self, row: int, column: int, text: str, rows: int, columns: int) -> int:
        """Fills the cell's positions (a span cut to what the table has room
        for); returns the column after it."""
        columns = min(columns, MAX_COLUMNS - column)
        rows = max(1, min(rows, (MAX_CELLS - len(self.text)) // columns))
        for r in range(row, row + rows):
            for c in range(column, column + columns):
                self.text[(r, c)] = text
        self.extent[(row, column)] = (rows, columns)
        self.columns = max(self.columns, column + columns)
        return column + columns


def _own_rows(node: Any, nearest_table: Any) -> list[Any]:
    return [row for row in node.css("tr") if nearest_table(row).mem_id == node.mem_id]


def html_table(node: Any, nearest_table: Any) -> Table | None:
    """The <table> node as a Table (None when it holds no text); rows of a
    nested table stay the text of their cell."""
    grid = _Grid()
    header = True
    header_rows = 0
    keyed = 0  # rows that are a key (<th>) and its values (<td>)
    trs = _own_rows(node, nearest_table)
    for r, tr in enumerate(trs):
        if len(grid.text) + max(1, grid.columns) > MAX_CELLS:
            trs = trs[:r]
            break
        cells = [c for c in tr.iter() if c.tag in ("td", "th")]
        column = 0
        for cell in cells:
            while (r, column) in grid.text:
                column += 1
            if column >= MAX_COLUMNS:
                break
            rows = min(_span(cell.attributes.get("rowspan")), len(trs) - r)
            column = grid.place(
                r, column, cell_text(cell), rows, _span(cell.attributes.get("colspan"))
            )
        in_head = tr.parent is not None and tr.parent.tag == "thead"
        header = header and bool(cells) and (in_head or all(c.tag == "th" for c in cells))
        header_rows += 1 if header else 0
        tags = [c.tag for c in cells]
        keyed += 1 if len(tags) >= 2 and tags[0] == "th" and "th" not in tags[1:] else 0
    # key-value rows from the first (an infobox without a title): no header row
    key_value = header_rows == 0 and keyed == len(trs) and keyed >= 2
    return _table(grid, len(trs), header_rows, key_value)


def _kept(grid: _Grid, count: int) -> list[int]:
    """Rows with text, less a pivot's blank row that only opens rowspans."""
    own: dict[int, list[tuple[int, int]]] = {}
    for origin in grid.extent:
        own.setdefault(origin[0], []).append(origin)
    kept: list[int] = []
    for r in range(count):
        texts = [grid.text.get((r, c), "") for c in range(grid.columns)]
        if not any(texts):
            continue
        opens_only = bool(own.get(r)) and all(grid.extent[o][0] > 1 for o in own[r])
        blank = any((r, c) not in grid.text for c in range(grid.columns))
        if opens_only and blank and r + 1 < count:
            continue
        kept.append(r)
    return kept


def _table(grid: _Grid, count: int, header_rows: int, key_value: bool) -> Table | None:
    kept = _kept(grid, count)
    if not kept:
        return None
    rows = tuple(tuple(grid.text.get((r, c), "") for c in range(grid.columns)) for r in kept)
    index = {old: new for new, old in enumerate(kept)}
    spans: list[CellSpan] = []
    for (row, column), (height, width) in sorted(grid.extent.items()):
        covered = [index[r] for r in range(row, row + height) if r in index]
        if covered and (len(covered) > 1 or width > 1) and grid.text.get((row, column)):
            spans.append(CellSpan(covered[0], column, len(covered), width))
    header = sum(1 for r in kept if r < header_rows)
    return Table(rows=rows, header_rows=0 if key_value else max(1, header), spans=tuple(spans))
