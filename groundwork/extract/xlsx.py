"""XLSX with openpyxl in read-only mode (12.4 s / 974 MB in normal mode against
1.1 s / 154 MB read-only on a 172 KB sheet measured here), cached formula
values (data_only).

What read-only mode does not expose is read from the package's XML directly,
streamed: merged ranges (their value is repeated in every covered cell so rows
read whole, and kept as spans), formulas without a cached value (a file
written by a library and never opened in a spreadsheet application has none:
the formula is shown, marked by its "=", and a warning says so), which sheets
are hidden (extracted, but located and reported as hidden: a hidden sheet often
holds the lookup table a visible one depends on, and a user asking about it
should find it), and charts (their cached series as tables, see charts.py).

A sheet becomes one table per block of connected cells: tables side by side or
one above the other are separate tables, each located by sheet!range, in
reading order with the sheet's charts.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any
from zipfile import ZipFile

import openpyxl
from lxml import etree
from openpyxl.utils import get_column_letter, range_boundaries
from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

from groundwork.documents import Block, BlockKind, CellSpan, FailureReason, Location, Table
from groundwork.extract.base import Extracted, ExtractionContext, Refused, open_zip
from groundwork.extract.charts import CHART_RELATIONSHIP, chart_blocks, read_chart
from groundwork.extract.strict_ooxml import as_transitional, is_strict

MAX_CELLS = 2_000_000  # non-empty cells kept
MAX_STORED_CELLS = 20_000_000  # cells walked, empty or not (styled empties are stored too)
#: A table wider than this keeps its first columns (a sheet 16,384 columns wide
#: is a data dump, not a table anyone reads across), with a warning.
MAX_TABLE_COLUMNS = 256
#: Cells of one table laid out densely (rows x columns); a sparse sheet whose
#: few cells span a huge area would otherwise become millions of empty cells.
MAX_TABLE_GRID = 1_000_000
#: Pieces of a sheet merged when their bounding boxes overlap (a sparse table's
#: islands); past this many pieces the sheet is a scatter, left as it is.
MAX_PIECES_MERGED = 2_000
MAX_CHARTS = 200
#: A merged range's value is copied into its cells only up to this area: a
#: range merged over a whole sheet would otherwise write billions of cells.
MAX_MERGED_FILL = 100_000

_M = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_XDR = "http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"
_C = "http://schemas.openxmlformats.org/drawingml/2006/chart"
_DRAWING = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/drawing"
_COMMENTS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/comments"
_THREADED = "http://schemas.microsoft.com/office/2017/10/relationships/threadedComment"
_PERSON = "http://schemas.microsoft.com/office/2017/10/relationships/person"
_TC = "http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments"
MAX_COMMENTS = 10_000
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True)

Cell = tuple[int, int]  # (row, column), 1-based


@dataclass(slots=True)
class _SheetPart:
    """What the sheet's XML says beyond openpyxl's read-only cells."""

    name: str
    hidden: bool = False
    merged: list[tuple[int, int, int, int]] = field(
        default_factory=list
    )  # min_col, min_row, max_col, max_row
    uncached: dict[Cell, str] = field(default_factory=dict)  # formula cells without a value
    charts: list[tuple[Cell, str | None, bytes]] = field(default_factory=list)
    comments: list[tuple[Cell, str, str]] = field(default_factory=list)  # cell, author, text


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _part_path(base: str, target: str) -> str:
    if target.startswith("/"):
        return target.lstrip("/")
    return posixpath.normpath(posixpath.join(posixpath.dirname(base), target))


def _relationships(archive: ZipFile, part: str) -> dict[str, tuple[str, str]]:
    """rId -> (type, part path) for one part."""
    rels = posixpath.join(posixpath.dirname(part), "_rels", posixpath.basename(part) + ".rels")
    try:
        root = etree.fromstring(archive.read(rels), _PARSER)
    except (KeyError, etree.XMLSyntaxError):
        return {}
    return {
        r.get("Id") or "": (r.get("Type") or "", _part_path(part, r.get("Target") or ""))
        for r in root.iter(f"{{{_REL}}}Relationship")
        if r.get("TargetMode") != "External"
    }


def _cell(ref: str) -> Cell | None:
    try:
        letters, row = coordinate_from_string(ref)
        return row, column_index_from_string(letters)
    except ValueError:
        return None


def _scan_sheet(archive: ZipFile, path: str, part: _SheetPart) -> None:
    """Merged ranges and formulas without a cached value, streamed (a sheet's
    XML can be hundreds of MB; elements are freed as they are read)."""
    cell_tag, merge_tag = f"{{{_M}}}c", f"{{{_M}}}mergeCell"
    walked = 0
    try:
        with archive.open(path) as handle:
            for _, element in etree.iterparse(handle, tag=(cell_tag, merge_tag)):
                if element.tag == merge_tag:
                    try:
                        bounds = range_boundaries(element.get("ref") or "")
                    except (ValueError, TypeError):
                        bounds = None
                    if bounds and None not in bounds:
                        part.merged.append(bounds)  # type: ignore[arg-type]
                else:
                    walked += 1
                    formula = element.find(f"{{{_M}}}f")
                    if formula is not None and not (element.findtext(f"{{{_M}}}v") or "").strip():
                        where = _cell(element.get("r") or "")
                        if where is not None:
                            part.uncached[where] = (formula.text or "").strip()
                    element.clear()
                    if walked > MAX_STORED_CELLS:
                        break
    except (KeyError, etree.XMLSyntaxError):
        return


def _scan_comments(archive: ZipFile, path: str, part: _SheetPart, people: dict[str, str]) -> None:
    """Notes and threaded comments on the sheet's cells: reviewers' questions
    and answers about the data ("why is 2023 lower?"), located by cell. Excel
    also writes each thread as a legacy note (a "[Threaded comment]" mirror),
    which is skipped for cells that have the thread."""
    related = _relationships(archive, path).values()
    threaded: set[Cell] = set()
    for kind, target in related:
        if kind != _THREADED:
            continue
        try:
            root = etree.fromstring(archive.read(target), _PARSER)
        except (KeyError, etree.XMLSyntaxError):
            continue
        for comment in root.iter(f"{{{_TC}}}threadedComment"):
            where = _cell(comment.get("ref") or "")
            text = (comment.findtext(f"{{{_TC}}}text") or "").strip()
            if where is not None and text and len(part.comments) < MAX_COMMENTS:
                threaded.add(where)
                author = people.get(comment.get("personId") or "", "")
                part.comments.append((where, author, text))
    for kind, target in related:
        if kind != _COMMENTS:
            continue
        try:
            root = etree.fromstring(archive.read(target), _PARSER)
        except (KeyError, etree.XMLSyntaxError):
            continue
        authors = [a.text or "" for a in root.iter(f"{{{_M}}}author")]
        for comment in root.iter(f"{{{_M}}}comment"):
            where = _cell(comment.get("ref") or "")
            if where is None or where in threaded or len(part.comments) >= MAX_COMMENTS:
                continue
            text = "".join(t.text or "" for t in comment.iter(f"{{{_M}}}t")).strip()
            try:
                author = authors[int(comment.get("authorId") or "")]
            except (ValueError, IndexError):
                author = ""
            if text:
                part.comments.append((where, "" if author.startswith("tc=") else author, text))


def _people(archive: ZipFile) -> dict[str, str]:
    """Threaded comments' authors: person id -> display name."""
    for kind, target in _relationships(archive, "xl/workbook.xml").values():
        if kind == _PERSON:
            try:
                root = etree.fromstring(archive.read(target), _PARSER)
            except (KeyError, etree.XMLSyntaxError):
                return {}
            return {
                person.get("id") or "": person.get("displayName") or ""
                for person in root.iter(f"{{{_TC}}}person")
            }
    return {}


def _scan_charts(archive: ZipFile, path: str, part: _SheetPart) -> None:
    """Charts drawn on the sheet (or a chart sheet), each with its anchor."""
    for kind, drawing in _relationships(archive, path).values():
        if kind != _DRAWING:
            continue
        try:
            root = etree.fromstring(archive.read(drawing), _PARSER)
        except (KeyError, etree.XMLSyntaxError):
            continue
        targets = _relationships(archive, drawing)
        for anchor in root:
            if not isinstance(anchor.tag, str):
                continue
            for reference in anchor.iter(f"{{{_C}}}chart"):
                kind_and_path = targets.get(reference.get(f"{{{_R}}}id") or "")
                if kind_and_path is None or kind_and_path[0] != CHART_RELATIONSHIP:
                    continue
                try:
                    xml = archive.read(kind_and_path[1])
                except KeyError:
                    continue
                start, cell_range = _anchor(anchor)
                if len(part.charts) < MAX_CHARTS:
                    part.charts.append((start, cell_range, xml))


def _anchor(anchor: Any) -> tuple[Cell, str | None]:
    """The cells a drawing anchor covers: (top-left cell, "E22:J36")."""
    corners = []
    for name in ("from", "to"):
        corner = anchor.find(f"{{{_XDR}}}{name}")
        if corner is None:
            continue
        try:
            corners.append(
                (
                    int(corner.findtext(f"{{{_XDR}}}row") or "") + 1,
                    int(corner.findtext(f"{{{_XDR}}}col") or "") + 1,
                )
            )
        except ValueError:
            continue
    if not corners:
        return (0, 0), None
    first, last = corners[0], corners[-1]
    return first, f"{get_column_letter(first[1])}{first[0]}:{get_column_letter(last[1])}{last[0]}"


def _sheet_parts(archive: ZipFile) -> list[_SheetPart]:
    """Every sheet in workbook order, with its XML-only facts."""
    try:
        workbook = etree.fromstring(archive.read("xl/workbook.xml"), _PARSER)
    except (KeyError, etree.XMLSyntaxError):
        return []
    targets = _relationships(archive, "xl/workbook.xml")
    people = _people(archive)
    parts = []
    for sheet in workbook.iterfind(f"{{{_M}}}sheets/{{{_M}}}sheet"):
        part = _SheetPart(
            name=sheet.get("name") or "",
            hidden=sheet.get("state") in ("hidden", "veryHidden"),
        )
        target = targets.get(sheet.get(f"{{{_R}}}id") or "")
        if target is not None:
            _scan_sheet(archive, target[1], part)
            _scan_charts(archive, target[1], part)
            _scan_comments(archive, target[1], part, people)
        parts.append(part)
    return parts


def extract_xlsx(data: bytes, ctx: ExtractionContext) -> Extracted:
    archive = open_zip(data, ctx.limits)
    if is_strict(archive):
        data = as_transitional(archive)
        archive = ZipFile(BytesIO(data))
    with archive:
        parts = _sheet_parts(archive)
    try:
        workbook = openpyxl.load_workbook(BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many types for damaged workbooks
        raise Refused(FailureReason.MALFORMED, f"not a readable workbook: {exc}") from exc
    worksheets = {sheet.title: sheet for sheet in workbook.worksheets}
    known = {part.name for part in parts}
    parts.extend(_SheetPart(name=title) for title in worksheets if title not in known)
    blocks: list[Block] = []
    warnings: list[str] = []
    truncated = False
    cells_read = 0
    try:
        walked = 0
        for part in parts:
            sheet = worksheets.get(part.name)
            grid: dict[Cell, str] = {}
            if sheet is not None:
                # The declared dimension can claim A1:XFD1048576 (an inflated
                # sheet): walk the rows actually stored instead.
                sheet.reset_dimensions()
                for row in sheet.iter_rows():
                    walked += len(row)
                    for cell in row:
                        text = _cell_text(getattr(cell, "value", None))
                        if text:
                            grid[(cell.row, cell.column)] = text  # type: ignore[index]
                            cells_read += 1
                    if cells_read > MAX_CELLS or walked > MAX_STORED_CELLS:
                        truncated = True
                        warnings.append(
                            f"only the first {min(cells_read, MAX_CELLS)} non-empty cells were read"
                        )
                        break
            for where, formula in part.uncached.items():
                if where not in grid and formula:
                    grid[where] = f"={formula}"
            if part.uncached:
                warnings.append(
                    f"sheet {part.name!r}: {len(part.uncached)} formula cells have no saved "
                    "result (the file was not recalculated by a spreadsheet application); they "
                    "show their formula (=...) instead: open and save it in Excel or "
                    "LibreOffice to index the values"
                )
            for min_col, min_row, max_col, max_row in part.merged:
                value = grid.get((min_row, min_col))
                if value and (max_row - min_row + 1) * (max_col - min_col + 1) <= MAX_MERGED_FILL:
                    for r in range(min_row, max_row + 1):
                        for c in range(min_col, max_col + 1):
                            grid.setdefault((r, c), value)
            where_part = "hidden sheet" if part.hidden else None
            if part.hidden:
                warnings.append(
                    f"sheet {part.name!r} is hidden in the workbook; its content is extracted "
                    "and marked as from a hidden sheet"
                )
            blocks.append(
                Block(
                    BlockKind.HEADING,
                    part.name,
                    Location(sheet=part.name, part=where_part),
                    level=1,
                )
            )
            placed: list[tuple[Cell, list[Block]]] = []
            for start, table_blocks, notes in _tables(part.name, grid, part.merged, where_part):
                placed.append((start, table_blocks))
                if notes:
                    truncated = True
                    warnings.extend(notes)
            for number, (start, cell_range, xml) in enumerate(part.charts, start=1):
                chart = read_chart(xml)
                name = f"chart {number}"
                if chart is None:
                    warnings.append(f"sheet {part.name!r}: no data could be read from {name}")
                    continue
                location = Location(sheet=part.name, cell_range=cell_range, part=name)
                placed.append((start, chart_blocks(chart, location)))
            for _, placed_blocks in sorted(placed, key=lambda item: item[0]):
                blocks.extend(placed_blocks)
            for (row, column), author, text in sorted(part.comments, key=lambda c: c[0]):
                cell = f"{get_column_letter(column)}{row}"
                blocks.append(
                    Block(
                        BlockKind.PARAGRAPH,
                        f"[comment on {cell}" + (f" by {author}" if author else "") + f"]: {text}",
                        Location(sheet=part.name, cell_range=cell, part="comment"),
                    )
                )
            if cells_read > MAX_CELLS or walked > MAX_STORED_CELLS:
                break
    finally:
        workbook.close()
    return Extracted(blocks=blocks, warnings=warnings, truncated=truncated)


def _pieces(grid: dict[Cell, str]) -> list[set[Cell]]:
    """Cells joined to their non-empty neighbours above, below, left and right;
    pieces whose bounding boxes overlap are one table (a sparse table's empty
    cells split it into islands that lie inside one another's box)."""
    parent: dict[Cell, Cell] = {cell: cell for cell in grid}

    def root(cell: Cell) -> Cell:
        while parent[cell] != cell:
            parent[cell] = parent[parent[cell]]
            cell = parent[cell]
        return cell

    for r, c in grid:
        for neighbour in ((r + 1, c), (r, c + 1)):
            if neighbour in parent:
                a, b = root((r, c)), root(neighbour)
                if a != b:
                    parent[b] = a
    groups: dict[Cell, set[Cell]] = {}
    for cell in grid:
        groups.setdefault(root(cell), set()).add(cell)
    pieces = list(groups.values())
    if len(pieces) > MAX_PIECES_MERGED:
        return pieces
    boxes = [_box(piece) for piece in pieces]
    changed = True
    while changed:
        changed = False
        merged_boxes: list[tuple[int, int, int, int]] = []
        merged_pieces: list[set[Cell]] = []
        for box, piece in sorted(zip(boxes, pieces, strict=True), key=lambda item: item[0]):
            for k, other in enumerate(merged_boxes):
                if _overlap(other, box):
                    merged_pieces[k] |= piece
                    merged_boxes[k] = (
                        min(other[0], box[0]),
                        min(other[1], box[1]),
                        max(other[2], box[2]),
                        max(other[3], box[3]),
                    )
                    changed = True
                    break
            else:
                merged_boxes.append(box)
                merged_pieces.append(piece)
        boxes, pieces = merged_boxes, merged_pieces
    return pieces


def _box(piece: set[Cell]) -> tuple[int, int, int, int]:
    rows = [r for r, _ in piece]
    columns = [c for _, c in piece]
    return min(rows), min(columns), max(rows), max(columns)


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def _tables(
    sheet: str,
    grid: dict[Cell, str],
    merged: list[tuple[int, int, int, int]],
    part: str | None,
) -> Iterator[tuple[Cell, list[Block], list[str]]]:
    """Each piece of the sheet as (top-left cell, blocks, truncation notes):
    a lone cell is a paragraph, a first row that is one merged cell across the
    whole table is its title (a paragraph above it), the rest a table."""
    for piece in _pieces(grid):
        top, left, bottom, right = _box(piece)
        notes: list[str] = []
        rows = sorted({r for r, _ in piece})
        columns = sorted({c for _, c in piece})
        if len(columns) > MAX_TABLE_COLUMNS:
            notes.append(
                f"sheet {sheet!r}: the table at {get_column_letter(left)}{top} has "
                f"{len(columns)} columns; only the first {MAX_TABLE_COLUMNS} were kept"
            )
            columns = columns[:MAX_TABLE_COLUMNS]
        if len(rows) * len(columns) > MAX_TABLE_GRID:
            keep = max(1, MAX_TABLE_GRID // len(columns))
            notes.append(
                f"sheet {sheet!r}: the table at {get_column_letter(left)}{top} has "
                f"{len(rows)} rows; only the first {keep} were kept"
            )
            rows = rows[:keep]
        blocks: list[Block] = []
        title = _title_row(rows, columns, merged, grid)
        if title is not None:
            blocks.append(
                Block(
                    BlockKind.PARAGRAPH,
                    grid[(rows[0], columns[0])],
                    Location(sheet=sheet, cell_range=title, part=part),
                )
            )
            rows = rows[1:]
        if rows:
            body = tuple(tuple(grid.get((r, c), "") for c in columns) for r in rows)
            first = f"{get_column_letter(columns[0])}{rows[0]}"
            last = f"{get_column_letter(columns[-1])}{rows[-1]}"
            cell_range = first if first == last else f"{first}:{last}"
            location = Location(sheet=sheet, cell_range=cell_range, part=part)
            if len(body) == 1 and len(columns) == 1:
                blocks.append(Block(BlockKind.PARAGRAPH, body[0][0], location))
            else:
                table = Table(
                    rows=body,
                    header_rows=1,
                    spans=_spans(rows, columns, merged),
                    source_rows=tuple(rows),  # a chunk of rows cites their own range
                )
                blocks.append(Block(BlockKind.TABLE, table.to_markdown(), location, table=table))
        yield (top, left), blocks, notes


def _title_row(
    rows: list[int],
    columns: list[int],
    merged: list[tuple[int, int, int, int]],
    grid: dict[Cell, str],
) -> str | None:
    """The range of a first row that is one merged cell spanning every column
    of a taller table ("Reading List" over its columns): a caption, not data."""
    if len(rows) < 2 or len(columns) < 2:
        return None
    for min_col, min_row, max_col, max_row in merged:
        if (
            min_row == max_row == rows[0]
            and min_col <= columns[0]
            and max_col >= columns[-1]
            and grid.get((min_row, min_col))
        ):
            return f"{get_column_letter(min_col)}{min_row}:{get_column_letter(max_col)}{max_row}"
    return None


def _spans(
    rows: list[int], columns: list[int], merged: list[tuple[int, int, int, int]]
) -> tuple[CellSpan, ...]:
    """Merged ranges inside the table, in the table's own row/column indexes."""
    row_index = {r: i for i, r in enumerate(rows)}
    column_index = {c: i for i, c in enumerate(columns)}
    spans = []
    for min_col, min_row, max_col, max_row in merged:
        if min_row not in row_index or min_col not in column_index:
            continue
        height = sum(1 for r in rows if min_row <= r <= max_row)
        width = sum(1 for c in columns if min_col <= c <= max_col)
        if height > 1 or width > 1:
            spans.append(CellSpan(row_index[min_row], column_index[min_col], height, width))
    return tuple(sorted(spans, key=lambda s: (s.row, s.column)))
