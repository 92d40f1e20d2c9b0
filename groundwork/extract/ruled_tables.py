"""Tables drawn with ruling lines: pdfplumber's lattice geometry (edges
snapped and joined, intersections, cells, cells grouped into tables) fed with
edges read from pdfium's path objects and filled with pdfium's words.

pdfplumber's own `find_tables` first parses the whole page with pdfminer,
which was ~95% of PDF extraction time on pages with drawings (1.2 s for one
FAA handbook page); its geometry functions alone are cheap and need only the
edges, so only those are used.
"""

from __future__ import annotations

import ctypes
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from groundwork.documents import CellSpan, Table
from groundwork.extract.pdf_words import Word, as_text, without_controls, word_lines
from groundwork.extract.text_tables import header_rows_of

Box = tuple[float, float, float, float]  # x0, y0, x1, y1; y grows upwards
Matrix = tuple[float, float, float, float, float, float]
Edge = dict[str, object]

MAX_PATHS = 5000
MAX_SEGMENTS = 50_000
_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
SNAP = 3.0  # pdfplumber's defaults: snap, join and intersection tolerances
EDGE_MIN_LENGTH = 3.0
# a "cell" this thin is the gap between a shading fill and its border: pdfium's
# bounded text would hand it the overlapping letters of its neighbours
SLIVER = 6.0


def _matrix(obj: pdfium.PdfObject) -> Matrix:
    raw = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFPageObj_GetMatrix(obj, ctypes.byref(raw)):
        return _IDENTITY
    return (raw.a, raw.b, raw.c, raw.d, raw.e, raw.f)


def _compose(inner: Matrix, outer: Matrix) -> Matrix:
    a, b, c, d, e, f = inner
    A, B, C, D, E, F = outer  # noqa: N806
    return (
        a * A + b * C,
        a * B + b * D,
        c * A + d * C,
        c * B + d * D,
        e * A + f * C + E,
        e * B + f * D + F,
    )


def _paths(page: pdfium.PdfPage) -> Iterator[tuple[pdfium.PdfObject, Matrix]]:
    """Path objects with the matrix that takes them to page space, through
    any Form XObjects they sit in."""
    forms: dict[int, Matrix] = {0: _IDENTITY}
    count = 0
    for obj in page.get_objects(max_depth=3):
        outer = forms.get(obj.level, _IDENTITY)
        if obj.type == pdfium_c.FPDF_PAGEOBJ_FORM:
            forms[obj.level + 1] = _compose(_matrix(obj), outer)
        elif obj.type == pdfium_c.FPDF_PAGEOBJ_PATH:
            count += 1
            if count > MAX_PATHS:
                return
            yield obj, _compose(_matrix(obj), outer)


#: a filled path thinner than this is a rule drawn as a rectangle
RULE_THICKNESS = 2.0


def ruling_edges(page: pdfium.PdfPage) -> list[Edge]:
    """Horizontal and vertical straight pieces of the page's paths, as
    pdfplumber edge dicts (measured from the top of the page). The sides of a
    filled area that is no thin rule (a cell's shading) carry "shading", one
    number per path."""
    height = page.get_height()
    edges: list[Edge] = []
    x, y = ctypes.c_float(), ctypes.c_float()
    fill, stroke = ctypes.c_int(), ctypes.c_int()
    segments = 0
    for obj, (a, b, c, d, e, f) in _paths(page):
        n = pdfium_c.FPDFPath_CountSegments(obj)
        segments += max(n, 0)
        if segments > MAX_SEGMENTS:
            break
        own: list[Edge] = []
        points: list[tuple[float, float]] = []
        start: tuple[float, float] | None = None
        previous: tuple[float, float] | None = None
        for i in range(n):
            segment = pdfium_c.FPDFPath_GetPathSegment(obj, i)
            if not pdfium_c.FPDFPathSegment_GetPoint(segment, ctypes.byref(x), ctypes.byref(y)):
                continue
            point = (a * x.value + c * y.value + e, b * x.value + d * y.value + f)
            points.append(point)
            kind = pdfium_c.FPDFPathSegment_GetType(segment)
            if kind == pdfium_c.FPDF_SEGMENT_MOVETO:
                start = previous = point
                continue
            if previous is not None and kind == pdfium_c.FPDF_SEGMENT_LINETO:
                _add_edge(own, previous, point, height)
            previous = point
            if pdfium_c.FPDFPathSegment_GetClose(segment) and start is not None:
                _add_edge(own, point, start, height)
                previous = start
        if own and pdfium_c.FPDFPath_GetDrawMode(obj, ctypes.byref(fill), ctypes.byref(stroke)):
            width = max(p[0] for p in points) - min(p[0] for p in points)
            tall = max(p[1] for p in points) - min(p[1] for p in points)
            if not stroke.value and min(width, tall) >= RULE_THICKNESS:
                for edge in own:
                    edge["shading"] = len(edges)  # the path's first edge: one id per path
        edges.extend(own)
    return edges


#: rule pairs past which a page is a drawing: its frames are not completed
MAX_EDGE_PAIRS = 4_000_000
#: a shading's side this close to a rule, but not on it, is set inside a cell
INSET = 8.0


def _span(edge: Edge) -> tuple[float, float, float]:
    """(position across the edge, start and end along it)."""
    if edge["orientation"] == "v":
        return _at(edge, "x0"), _at(edge, "top"), _at(edge, "bottom")
    return _at(edge, "top"), _at(edge, "x0"), _at(edge, "x1")


def _without_insets(edges: list[Edge]) -> list[Edge]:
    """The edges without the shadings set inside their cells' rules. A fill
    a few points in from the rules (a label cell's background, one per line
    of text) would make slivers of columns and split a cell's rows; a fill
    up to the rules, or bordered by none (a header row's band), is kept: its
    sides may be the only border a row has."""
    if not any("shading" in e for e in edges):
        return edges
    rules: dict[object, list[tuple[float, float, float]]] = {"h": [], "v": []}
    for edge in edges:
        if "shading" not in edge:
            rules[edge["orientation"]].append(_span(edge))
    for spans in rules.values():
        spans.sort()
    positions = {k: [s[0] for s in spans] for k, spans in rules.items()}

    def inset(side: Edge) -> bool:
        at, low, high = _span(side)
        spans, starts = rules[side["orientation"]], positions[side["orientation"]]
        for k in range(bisect_left(starts, at - INSET), bisect_right(starts, at + INSET)):
            rule_at, rule_low, rule_high = spans[k]
            if abs(rule_at - at) > SNAP and rule_low < high and low < rule_high:
                return True
        return False

    set_inside = {e["shading"] for e in edges if "shading" in e and inset(e)}
    return [e for e in edges if e.get("shading", -1) not in set_inside]


def _add_edge(
    edges: list[Edge], p: tuple[float, float], q: tuple[float, float], height: float
) -> None:
    (x0, y0), (x1, y1) = sorted((p, q))
    if abs(y1 - y0) < 1 and abs(x1 - x0) >= 1:
        top = height - (y0 + y1) / 2
        edges.append(
            {
                "x0": x0,
                "x1": x1,
                "top": top,
                "bottom": top,
                "width": x1 - x0,
                "height": 0.0,
                "orientation": "h",
                "object_type": "line",
            }
        )
    elif abs(x1 - x0) < 1 and abs(y1 - y0) >= 1:
        low, high = min(y0, y1), max(y0, y1)
        edges.append(
            {
                "x0": (x0 + x1) / 2,
                "x1": (x0 + x1) / 2,
                "top": height - high,
                "bottom": height - low,
                "width": 0.0,
                "height": high - low,
                "orientation": "v",
                "object_type": "line",
            }
        )


def _edge(orientation: str, x0: float, x1: float, top: float, bottom: float) -> Edge:
    return {
        "x0": x0,
        "x1": x1,
        "top": top,
        "bottom": bottom,
        "width": x1 - x0,
        "height": bottom - top,
        "orientation": orientation,
        "object_type": "line",
    }


def _at(edge: Edge, key: str) -> float:
    return float(edge[key])  # type: ignore[arg-type]


def _touches(column: Edge, y: float) -> bool:
    return _at(column, "top") - SNAP <= y <= _at(column, "bottom") + SNAP


def _open_sides(edges: list[Edge]) -> list[Edge]:
    """The sides a table drawn without an outer frame leaves out. Many tables
    rule only between their cells (row rules running the table's width,
    column rules inside it): the lattice then has no cell in the first and
    last columns (nor, without rules above and below, the first and last
    rows) and would keep the middle columns alone. Where row rules of the same
    extent (two or more) are joined by column rules standing inside that
    extent, the frame is completed."""
    horizontal = [e for e in edges if e["orientation"] == "h"]
    vertical = sorted((e for e in edges if e["orientation"] == "v"), key=lambda e: _at(e, "x0"))
    if len(horizontal) * len(vertical) > MAX_EDGE_PAIRS:
        return []  # a drawing, a map: no table's frame to complete
    # rules whose ends lie within SNAP of the first rule's in the stack
    stacks: dict[tuple[int, int], list[Edge]] = {}
    for rule in sorted(horizontal, key=lambda e: (_at(e, "x0"), _at(e, "x1"))):
        left, right = round(_at(rule, "x0") / SNAP), round(_at(rule, "x1") / SNAP)
        near = (
            stacks[key]
            for key in ((left + a, right + b) for a in (-1, 0, 1) for b in (-1, 0, 1))
            if key in stacks
        )
        stack = next(
            (
                s
                for s in near
                if abs(_at(s[0], "x0") - _at(rule, "x0")) <= SNAP
                and abs(_at(s[0], "x1") - _at(rule, "x1")) <= SNAP
            ),
            None,
        )
        if stack is None:
            stacks[(left, right)] = [rule]
        else:
            stack.append(rule)
    xs = [_at(v, "x0") for v in vertical]
    added: list[Edge] = []
    for stack in stacks.values():
        x0, x1 = min(_at(e, "x0") for e in stack), max(_at(e, "x1") for e in stack)
        inside = vertical[bisect_right(xs, x0 + SNAP) : bisect_left(xs, x1 - SNAP)]
        for ys, inner in _ruled_runs(stack, inside):
            added.extend(_frame(ys, inner, vertical, x0, x1))
    return added


def _ruled_runs(stack: list[Edge], inside: list[Edge]) -> list[tuple[list[float], list[Edge]]]:
    """The stack's rules in runs that the column rules `inside` its extent
    join (each column rule reaching two or more of them): two tables of one
    width on a page are two runs, and a rule no column rule reaches (a note's
    separator under the table) is in none."""
    ys = sorted({round(_at(e, "top"), 1) for e in stack})
    runs: list[tuple[set[float], list[Edge]]] = []
    for column in inside:
        reached = {y for y in ys if _touches(column, y)}
        if len(reached) < 2:
            continue
        joined = [run for run in runs if run[0] & reached]
        members = [column]
        for run in joined:
            runs.remove(run)
            reached |= run[0]
            members.extend(run[1])
        runs.append((reached, members))
    return [(sorted(run), columns) for run, columns in runs]


def _frame(
    ys: list[float], inner: list[Edge], vertical: list[Edge], x0: float, x1: float
) -> list[Edge]:
    """Sides at the rules' ends, a top and a bottom where the column rules end
    beyond the outer rules: whichever of them the drawing leaves out."""
    top = min(ys[0], *(_at(v, "top") for v in inner))
    bottom = max(ys[-1], *(_at(v, "bottom") for v in inner))
    added: list[Edge] = []
    for x in (x0, x1):
        drawn = any(
            abs(_at(v, "x0") - x) <= SNAP and _touches(v, top) and _touches(v, bottom)
            for v in vertical
        )
        if not drawn:
            added.append(_edge("v", x, x, top, bottom))
    if top < ys[0] - SNAP:
        added.append(_edge("h", x0, x1, top, top))
    if bottom > ys[-1] + SNAP:
        added.append(_edge("h", x0, x1, bottom, bottom))
    return added


def find_ruled_tables(
    page: pdfium.PdfPage, textpage: pdfium.PdfTextPage, words: list[Word] | None = None
) -> list[tuple[Table, Box]]:
    """Tables whose cells are drawn, with the words inside each cell. Kept only
    when at least two rows and two columns hold text and half the cells are
    filled: a wrong table is worse than none. `words` (the page's, read once
    by the caller) place the rows of a body drawn without row rules."""
    from pdfplumber import table as lattice
    from pdfplumber import utils

    height = page.get_height()
    edges = utils.filter_edges(
        lattice.merge_edges(_without_insets(ruling_edges(page)), SNAP, SNAP, SNAP, SNAP),  # type: ignore[arg-type]
        min_length=EDGE_MIN_LENGTH,
    )
    sides = _open_sides(edges)
    if sides:  # snapped with the drawn edges: a side a hair from a drawn one is that one
        edges = lattice.merge_edges([*edges, *sides], SNAP, SNAP, SNAP, SNAP)  # type: ignore[arg-type]
    if len(edges) < 4:
        return []
    cells = lattice.intersections_to_cells(lattice.edges_to_intersections(edges, SNAP, SNAP))
    found: list[tuple[Table, Box]] = []
    for group in lattice.cells_to_tables(cells):
        if words:
            group = _rows_by_lines(group, words, height)
        table = _grid_table(group, textpage, height)
        if table is None:
            continue
        x0 = min(c[0] for c in group)
        top = min(c[1] for c in group)
        x1 = max(c[2] for c in group)
        bottom = max(c[3] for c in group)
        found.append((table, (x0, height - bottom, x1, height - top)))
    return found


Cell = tuple[float, float, float, float]  # x0, top, x1, bottom; y grows downwards


def _rows_by_lines(group: list[Cell], words: list[Word], height: float) -> list[Cell]:
    """A body drawn with column rules but no row rules is one tall band of
    cells holding every record. When the table has at most a header band
    above it, the band is cut into rows at the lines that start a record
    (text in the first column and another), three or more of them. Other
    lines (a wrapped cell's continuation) go with the record above or, when
    the cells are set in the middle, the nearer one; a table with row rules
    keeps the rows they draw."""
    tops = sorted({c[1] for c in group})
    if len(tops) > 2:
        return group
    band = sorted((c for c in group if c[1] == tops[-1]), key=lambda c: c[0])
    if len(band) < 2:
        return group
    top, bottom = tops[-1], max(c[3] for c in band)
    left, right = band[0][0], max(c[2] for c in band)

    def column_of(word: Word) -> int | None:
        middle = (word.x0 + word.x1) / 2
        return next((i for i, c in enumerate(band) if c[0] <= middle < c[2]), None)

    inside = [
        w
        for w in words
        if left <= (w.x0 + w.x1) / 2 <= right and top < height - (w.y0 + w.y1) / 2 < bottom
    ]
    lines = word_lines(inside)
    columns_text = [
        " ".join(w.text for line in lines for w in line.words if column_of(w) == i)
        for i in range(len(band))
    ]
    if sum(1 for text in columns_text if _is_prose(text)) * 2 > sum(map(bool, columns_text)):
        return group  # paragraphs side by side in boxes: their lines are no records
    filled = [{column_of(w) for w in line.words} - {None} for line in lines]
    # a record's line fills the first column and another; a line holding the
    # first column alone is its label wrapping
    starts = [k for k, columns in enumerate(filled) if 0 in columns and len(columns) >= 2]
    if len(starts) < 3:
        return group

    def middle(k: int) -> float:
        return (lines[k].y0 + lines[k].y1) / 2

    # cells set at the top (the band opens with a record's line) continue
    # downwards: a line goes with the record above it. Cells set in the middle
    # wrap above and below their first column's line: the nearer record.
    top_aligned = starts[0] == 0
    owner = []
    for k in range(len(lines)):
        above = max((s for s in starts if s <= k), default=starts[0])
        below = min((s for s in starts if s >= k), default=starts[-1])
        nearer_below = middle(above) - middle(k) > middle(k) - middle(below)
        owner.append(below if nearer_below and not top_aligned else above)
    cuts = [top]
    for k in range(1, len(lines)):
        if owner[k] != owner[k - 1]:
            cuts.append((height - lines[k - 1].y0 + height - lines[k].y1) / 2)
    cuts.append(bottom)
    rows = [c for c in group if c[1] != tops[-1]]
    for upper, lower in zip(cuts, cuts[1:], strict=False):
        rows.extend((c[0], upper, c[2], lower) for c in band)
    return rows


def _grid_table(
    group: list[tuple[float, float, float, float]], textpage: pdfium.PdfTextPage, height: float
) -> Table | None:
    """The cells laid on the grid their edges make (pdfplumber's rows and
    columns: one per distinct top and left edge). A merged cell's text is
    repeated in every position it covers and the merge kept as a CellSpan, as
    the other formats do; the fill test counts it once, as before spans."""
    # a sliver between two close edges (a shading set inside a cell's rules,
    # a double rule) is no column or row of its own
    xs = _without_slivers(sorted({c[0] for c in group}), max(c[2] for c in group))
    tops = _without_slivers(sorted({c[1] for c in group}), max(c[3] for c in group))
    grid = [["" for _ in xs] for _ in tops]
    first = [["" for _ in xs] for _ in tops]  # each text once, at its top-left
    once = 0
    merged: list[CellSpan] = []
    for cell in group:
        x0, top, x1, bottom = cell
        if x1 - x0 < SLIVER or bottom - top < SLIVER:
            continue
        text = _text_in(textpage, cell, height)
        if not text:
            continue
        rows = sum(1 for t in tops if top - 0.5 <= t < bottom - 0.5)
        columns = sum(1 for x in xs if x0 - 0.5 <= x < x1 - 0.5)
        if not rows or not columns:
            continue
        once += 1
        row = next(i for i, t in enumerate(tops) if t >= top - 0.5)
        column = next(i for i, x in enumerate(xs) if x >= x0 - 0.5)
        if first[row][column]:
            continue  # two drawn cells in one grid cell (a sliver between them): one is kept
        first[row][column] = text
        for r in range(row, row + rows):
            for c in range(column, column + columns):
                grid[r][c] = text
        if rows > 1 or columns > 1:
            merged.append(CellSpan(row, column, rows, columns))
    kept = [i for i, r in enumerate(grid) if any(r)]
    if len(kept) < 2 or len(xs) < 2:
        return None
    if once / (len(kept) * len(xs)) < 0.5:
        return None  # mostly empty: a frame, a form, a layout grid
    texts = [text for row in first for text in row if text]
    if sum(1 for text in texts if _is_prose(text)) > len(texts) / 2:
        return None  # paragraphs laid out in boxes (a cover, a brochure): layout, not data
    rows_out = [tuple(grid[i]) for i in kept]
    if _right_to_left(rows_out):
        # the first column of a Hebrew or Arabic table is its rightmost
        rows_out = [tuple(reversed(row)) for row in rows_out]
        first = [list(reversed(row)) for row in first]
        merged = [
            CellSpan(s.row, len(xs) - s.column - s.columns, s.rows, s.columns) for s in merged
        ]
    renumber = {old: new for new, old in enumerate(kept)}
    spans = tuple(
        CellSpan(
            renumber[s.row],
            s.column,
            sum(1 for i in kept if s.row <= i < s.row + s.rows),
            s.columns,
        )
        for s in merged
        if s.row in renumber
    )
    # a group header spanning its columns is told by the positions it leaves empty
    header_rows = header_rows_of([tuple(first[i]) for i in kept])
    # a row runs from its top edge to the next row's (the last to the grid's
    # bottom), turned to the page's upward y as every PDF box here is
    bottoms = [*tops[1:], max(c[3] for c in group)]
    row_boxes = tuple((height - bottoms[i], height - tops[i]) for i in kept)
    return Table(rows=tuple(rows_out), header_rows=header_rows, spans=spans, row_boxes=row_boxes)


_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")


def _is_prose(text: str) -> bool:
    """A paragraph, not a cell's value: long and several sentences."""
    return len(text) > 200 and len(_SENTENCE_END.findall(text)) >= 2


def _without_slivers(edges: list[float], end: float) -> list[float]:
    """The grid's column (or row) starts without those whose column is
    thinner than SLIVER: its cells are gaps between close edges."""
    bounds = [*edges, end]
    return [edge for edge, after in zip(edges, bounds[1:], strict=True) if after - edge >= SLIVER]


_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")
_LETTER = re.compile(r"[^\W\d_]")


def _right_to_left(rows: list[tuple[str, ...]]) -> bool:
    """Most of the table's letters are Hebrew or Arabic."""
    text = "".join("".join(row) for row in rows)
    letters = len(_LETTER.findall(text))
    return letters > 0 and len(_RTL.findall(text)) > letters / 2


def _text_in(
    textpage: pdfium.PdfTextPage, cell: tuple[float, float, float, float], height: float
) -> str:
    """The cell's characters, by pdfium's own test of which fall inside (words
    are too coarse: pdfium may not separate marks in adjacent cells)."""
    x0, top, x1, bottom = cell
    text = textpage.get_text_bounded(x0, height - bottom, x1, height - top)
    return " ".join(as_text(without_controls(text)).split())
