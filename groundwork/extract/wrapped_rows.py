"""A borderless table's lines regrouped into its rows when cells wrap.

Each line of the table is read as a row of fragments first; a row of the
table is an anchor line and the wrapped cells' other lines around it. Where a
column holds figures (amounts, dates, counts: text that never wraps), a line
holding one is an anchor and no other line is, however full (a wrapped
description's second line beside a wrapped name's); without such a column, a
line filling half the columns or its first is one.

Which anchor a wrapped line belongs to is read per column, from how the
cells stand: the lines of one cell follow each other at the line pitch, so a
run of lines at that pitch inside a column is one cell, and it belongs to the
anchor standing inside it (its first line when cells sit at the top of the
row, its middle when they are centred). Where rows are set without space
between them, one run can cover several rows: it is cut by the table's
alignment, read from the runs that are not ambiguous, or else by which
alignment leaves no cell lopsided: set at the top, a wrapped line belongs to
the anchor above it; centred, each anchor has as many of its lines below it
as above it. Taking the nearest anchor, as before, gave a top-aligned cell's
third line to the next row (issue 36: row recall 0.47).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from groundwork.extract.pdf_words import WordLine

#: a header line's continuation is a short label, not a body cell's sentence
HEADER_LABEL = 25


@dataclass(slots=True)
class Row:
    lines: list[WordLine]
    cells: list[list[str]]  # per column, the texts in reading order

    @property
    def filled(self) -> int:
        return sum(1 for c in self.cells if c)


def _middle(row: Row) -> float:
    return (row.lines[0].y0 + row.lines[0].y1) / 2


def anchors_of(
    rows: list[Row], columns: int, header_rows: int, numeric: Callable[[str], bool]
) -> list[int]:
    """The rows (one line each) that start a row of the table."""
    body = range(header_rows, len(rows))
    figures: list[int] = []
    for column in range(columns):
        values = [" ".join(rows[k].cells[column]) for k in body if rows[k].cells[column]]
        if len(values) >= 2 and sum(1 for v in values if numeric(v)) >= 0.9 * len(values):
            figures.append(column)
    if figures:
        full = max(3, columns - 1)
        return [
            k
            for k, row in enumerate(rows)
            if k < header_rows or row.filled >= full or any(row.cells[c] for c in figures)
        ]
    return [
        k
        for k, row in enumerate(rows)
        if k < header_rows or row.filled >= max(2, (columns + 1) // 2) or row.cells[0]
    ]


def _pitch(rows: list[Row], columns: int) -> float:
    """The distance between one cell's lines: the small end of the distances
    between consecutive lines of a column (rows further apart than lines)."""
    height = sorted(row.lines[0].y1 - row.lines[0].y0 for row in rows)[len(rows) // 2]
    distances: list[float] = []
    for column in range(columns):
        ks = [k for k, row in enumerate(rows) if row.cells[column]]
        distances.extend(
            _middle(rows[a]) - _middle(rows[b]) for a, b in zip(ks, ks[1:], strict=False)
        )
    distances = sorted(d for d in distances if d > 0.6 * height)
    return distances[0] if distances else 1.3 * height


def _runs(rows: list[Row], column: int, pitch: float) -> list[list[int]]:
    """The column's lines cut into cells where they stand further apart than the pitch."""
    runs: list[list[int]] = []
    for k, row in enumerate(rows):
        if not row.cells[column]:
            continue
        if runs and _middle(rows[runs[-1][-1]]) - _middle(row) <= 1.25 * pitch:
            runs[-1].append(k)
        else:
            runs.append([k])
    return runs


def _centred(run: list[int], inside: list[int], anchors: set[int], owner: dict[int, int]) -> int:
    """Centred cells: each anchor of the run takes as many lines below it as
    it has above it; the lines left over go to the next. Returns how far the
    run falls short of that (0 when it is consistent)."""
    mismatch = 0
    fragments = [k for k in run if k not in anchors]
    above = [k for k in fragments if k < inside[0]]
    for k in above:
        owner[k] = inside[0]
    taken = len(above)
    for a, b in zip(inside, [*inside[1:], None], strict=True):
        end = len(fragments) if b is None else bisect_left(fragments, b)
        between = fragments[bisect_right(fragments, a) : end]
        if b is None:
            mismatch += abs(len(between) - taken)
            for k in between:
                owner[k] = a
            break
        mine = between[:taken]
        mismatch += taken - len(mine)
        for k in mine:
            owner[k] = a
        for k in between[taken:]:
            owner[k] = b
        taken = len(between) - len(mine)
    return mismatch


def _topped(
    run: list[int],
    inside: list[int],
    anchors: set[int],
    owner: dict[int, int],
    label: Callable[[int], bool] = lambda k: False,
) -> int:
    """Cells at the top of their rows: a line goes to the anchor above it.
    The mismatch: lines above the first anchor (header labels aside), and
    anchors given lines with nothing of their own in the column (a cell at
    the top of its row starts on the anchor's line)."""
    mismatch = 0
    for k in run:
        if k in anchors:
            continue
        above = bisect_left(inside, k)
        owner[k] = inside[above - 1] if above else inside[0]
        mismatch += 0 if above or label(k) else 1
    return mismatch + sum(1 for a in set(owner.values()) if a not in run)


def _alignment(
    runs: list[list[int]],
    body_anchors: list[int],
    anchors: set[int],
    label: Callable[[int], bool],
) -> str:
    """'top' or 'middle' for the table: the alignment fewer cells contradict.
    A cell holding one anchor contradicts the other alignment by where it
    starts (on the anchor's line, or above it); cells running into each other
    (rows set without space between) by what each alignment leaves lopsided.
    Cells under the header that may be its labels tell nothing; ties: top,
    the common case."""
    cost = {"top": 0, "middle": 0}
    for run in runs:
        inside = _inside(body_anchors, run)
        lines = [k for k in run if k not in anchors or k in inside]
        if any(label(k) for k in lines):
            continue
        if len(inside) == 1 and len(lines) >= 2:
            if lines[0] == inside[0]:
                cost["middle"] += 1
            elif lines[-1] > inside[0]:
                cost["top"] += 1
        elif len(inside) >= 2:
            cost["top"] += _topped(run, inside, anchors, {}, label)
            cost["middle"] += _centred(run, inside, anchors, {})
    return "middle" if cost["middle"] < cost["top"] else "top"


def _inside(body_anchors: list[int], run: list[int]) -> list[int]:
    """The body anchors within the run's lines."""
    return body_anchors[bisect_left(body_anchors, run[0]) : bisect_right(body_anchors, run[-1])]


def _nearest(run: list[int], rows: list[Row], anchor_list: list[int], mode: str) -> int:
    """The anchor of a run that holds none: the one above when cells sit at
    the top, else the one nearest the run's middle (ties go up)."""
    above = anchor_list[: bisect_left(anchor_list, run[0])]
    below = anchor_list[bisect_right(anchor_list, run[-1]) :]
    if not below or (mode == "top" and above):
        return above[-1]
    if not above:
        return below[0]
    centre = (_middle(rows[run[0]]) + _middle(rows[run[-1]])) / 2
    up = _middle(rows[above[-1]]) - centre
    down = centre - _middle(rows[below[0]])
    return below[0] if down < up - 0.5 else above[-1]


def _header_line(row: Row, numeric: Callable[[str], bool]) -> bool:
    text = " ".join(t for c in row.cells for t in c)
    return len(text) <= HEADER_LABEL and not numeric(text)


def _under_header(
    found: dict[int, int],
    rows: list[Row],
    header_rows: int,
    first_body: int,
    mode: str,
    numeric: Callable[[str], bool],
) -> None:
    """Lines between the header and the first body row: a centred first cell
    with as many lines below its anchor keeps them; else a short label is the
    header's own second line, longer text the first body cell's."""
    zone = [k for k in found if header_rows <= k < first_body]
    if not zone or first_body >= len(rows):
        return
    below = sum(1 for k, a in found.items() if a == first_body and k > first_body)
    for k in zone:
        header = not (mode == "middle" and below >= len(zone)) and _header_line(rows[k], numeric)
        found[k] = header_rows - 1 if header else first_body


def join_wrapped(
    rows: list[Row], columns: int, header_rows: int, numeric: Callable[[str], bool]
) -> list[Row]:
    """The table's rows, each wrapped cell's lines joined to its anchor."""
    anchor_list = anchors_of(rows, columns, header_rows, numeric)
    if len(anchor_list) < 2 or len(anchor_list) == len(rows):
        return rows
    anchors = set(anchor_list)
    pitch = _pitch(rows, columns)
    runs = {column: _runs(rows, column, pitch) for column in range(columns)}
    body_anchors = [a for a in anchor_list if a >= header_rows]
    first_body = body_anchors[0] if body_anchors else len(rows)

    def label(k: int) -> bool:
        return k < first_body and _header_line(rows[k], numeric)

    every_run = [r for rs in runs.values() for r in rs]
    mode = _alignment(every_run, body_anchors, anchors, label)
    owner: dict[tuple[int, int], int] = {}
    for column, column_runs in runs.items():
        for run in column_runs:
            inside = _inside(body_anchors, run)
            found: dict[int, int] = {}
            if not inside:
                target = _nearest(run, rows, anchor_list, mode)
                found = {k: target for k in run if k not in anchors}
            elif len(inside) == 1:
                found = {k: inside[0] for k in run if k not in anchors}
            elif mode == "middle":
                _centred(run, inside, anchors, found)
            else:
                _topped(run, inside, anchors, found, label)
            if header_rows:
                _under_header(found, rows, header_rows, first_body, mode, numeric)
            owner.update(((k, column), a) for k, a in found.items())
    return _merged(rows, columns, anchor_list, owner)


def _merged(
    rows: list[Row], columns: int, anchor_list: list[int], owner: dict[tuple[int, int], int]
) -> list[Row]:
    parts: dict[int, list[tuple[int, int]]] = {a: [] for a in anchor_list}
    for (k, column), a in owner.items():
        if a in parts:
            parts[a].append((k, column))
    out: list[Row] = []
    for a in anchor_list:
        pieces = sorted([*parts[a], *((a, c) for c in range(columns) if rows[a].cells[c])])
        cells: list[list[str]] = [[] for _ in range(columns)]
        lines = [rows[a].lines[0]]
        for k, column in pieces:
            cells[column].extend(rows[k].cells[column])
            if all(line is not rows[k].lines[0] for line in lines):
                lines.append(rows[k].lines[0])
        out.append(Row(lines, cells))
    return out
