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
from collections.abc import Iterator

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from groundwork.documents import CellSpan, Table
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


def ruling_edges(page: pdfium.PdfPage) -> list[Edge]:
    """Horizontal and vertical straight pieces of the page's paths, as
    pdfplumber edge dicts (measured from the top of the page)."""
    height = page.get_height()
    edges: list[Edge] = []
    x, y = ctypes.c_float(), ctypes.c_float()
    segments = 0
    for obj, (a, b, c, d, e, f) in _paths(page):
        n = pdfium_c.FPDFPath_CountSegments(obj)
        segments += max(n, 0)
        if segments > MAX_SEGMENTS:
            break
        start: tuple[float, float] | None = None
        previous: tuple[float, float] | None = None
        for i in range(n):
            segment = pdfium_c.FPDFPath_GetPathSegment(obj, i)
            if not pdfium_c.FPDFPathSegment_GetPoint(segment, ctypes.byref(x), ctypes.byref(y)):
                continue
            point = (a * x.value + c * y.value + e, b * x.value + d * y.value + f)
            kind = pdfium_c.FPDFPathSegment_GetType(segment)
            if kind == pdfium_c.FPDF_SEGMENT_MOVETO:
                start = previous = point
                continue
            if previous is not None and kind == pdfium_c.FPDF_SEGMENT_LINETO:
                _add_edge(edges, previous, point, height)
            previous = point
            if pdfium_c.FPDFPathSegment_GetClose(segment) and start is not None:
                _add_edge(edges, point, start, height)
                previous = start
    return edges


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


def find_ruled_tables(
    page: pdfium.PdfPage, textpage: pdfium.PdfTextPage
) -> list[tuple[Table, Box]]:
    """Tables whose cells are drawn, with the words inside each cell. Kept only
    when at least two rows and two columns hold text and half the cells are
    filled: a wrong table is worse than none."""
    from pdfplumber import table as lattice
    from pdfplumber import utils

    height = page.get_height()
    edges = utils.filter_edges(
        lattice.merge_edges(ruling_edges(page), SNAP, SNAP, SNAP, SNAP),  # type: ignore[arg-type]
        min_length=EDGE_MIN_LENGTH,
    )
    if len(edges) < 4:
        return []
    cells = lattice.intersections_to_cells(lattice.edges_to_intersections(edges, SNAP, SNAP))
    found: list[tuple[Table, Box]] = []
    for group in lattice.cells_to_tables(cells):
        table = _grid_table(group, textpage, height)
        if table is None:
            continue
        x0 = min(c[0] for c in group)
        top = min(c[1] for c in group)
        x1 = max(c[2] for c in group)
        bottom = max(c[3] for c in group)
        found.append((table, (x0, height - bottom, x1, height - top)))
    return found


def _grid_table(
    group: list[tuple[float, float, float, float]], textpage: pdfium.PdfTextPage, height: float
) -> Table | None:
    """The cells laid on the grid their edges make (pdfplumber's rows and
    columns: one per distinct top and left edge). A merged cell's text is
    repeated in every position it covers and the merge kept as a CellSpan, as
    the other formats do; the fill test counts it once, as before spans."""
    xs = sorted({c[0] for c in group})
    tops = sorted({c[1] for c in group})
    column_of = {x: i for i, x in enumerate(xs)}
    row_of = {t: i for i, t in enumerate(tops)}
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
        once += 1
        row, column = row_of[top], column_of[x0]
        first[row][column] = text
        rows = sum(1 for t in tops if top <= t < bottom - 0.5)
        columns = sum(1 for x in xs if x0 <= x < x1 - 0.5)
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
    renumber = {old: new for new, old in enumerate(kept)}
    rows_out = [tuple(grid[i]) for i in kept]
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


def _text_in(
    textpage: pdfium.PdfTextPage, cell: tuple[float, float, float, float], height: float
) -> str:
    """The cell's characters, by pdfium's own test of which fall inside (words
    are too coarse: pdfium may not separate marks in adjacent cells)."""
    x0, top, x1, bottom = cell
    return " ".join(textpage.get_text_bounded(x0, height - bottom, x1, height - top).split())
