"""XLSX with openpyxl in read-only mode (12.4 s / 974 MB in normal mode against
1.1 s / 154 MB read-only on a 172 KB sheet measured here), cached formula
values (data_only). Each sheet's used range becomes tables located by
sheet!range; merged ranges (read from the sheet XML, which read-only mode does
not expose) repeat their value in every covered cell so rows read whole."""

from __future__ import annotations

import posixpath
from io import BytesIO
from typing import Any
from zipfile import ZipFile

import openpyxl
from lxml import etree
from openpyxl.utils import get_column_letter, range_boundaries

from groundwork.documents import Block, BlockKind, FailureReason, Location, Table
from groundwork.extract.base import Extracted, ExtractionContext, Refused, open_zip

MAX_CELLS = 2_000_000  # non-empty cells kept
MAX_STORED_CELLS = 20_000_000  # cells walked, empty or not (styled empties are stored too)
_NS = {
    "m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "rel": "http://schemas.openxmlformats.org/package/2006/relationships",
}


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _merged_ranges(archive: ZipFile) -> dict[str, list[str]]:
    """Sheet name -> merged ranges, from workbook.xml and each sheet's <mergeCells>."""
    try:
        workbook = etree.fromstring(archive.read("xl/workbook.xml"))
        rels = etree.fromstring(archive.read("xl/_rels/workbook.xml.rels"))
    except (KeyError, etree.XMLSyntaxError):
        return {}
    targets = {r.get("Id"): r.get("Target") for r in rels.findall("rel:Relationship", _NS)}
    merged: dict[str, list[str]] = {}
    for sheet in workbook.findall("m:sheets/m:sheet", _NS):
        target = targets.get(sheet.get(f"{{{_NS['r']}}}id"))
        if not target:
            continue
        path = (
            target.lstrip("/")
            if target.startswith("/")
            else posixpath.normpath(posixpath.join("xl", target))
        )
        try:
            with archive.open(path) as handle:
                refs = [
                    element.get("ref")
                    for _, element in etree.iterparse(handle, tag=f"{{{_NS['m']}}}mergeCell")
                    if element.get("ref")
                ]
        except (KeyError, etree.XMLSyntaxError):
            continue
        merged[sheet.get("name") or ""] = refs
    return merged


def extract_xlsx(data: bytes, ctx: ExtractionContext) -> Extracted:
    archive = open_zip(data, ctx.limits)
    merged = _merged_ranges(archive)
    try:
        workbook = openpyxl.load_workbook(BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many types for damaged workbooks
        raise Refused(FailureReason.MALFORMED, f"not a readable workbook: {exc}") from exc
    blocks: list[Block] = []
    warnings: list[str] = []
    cells_read = 0
    try:
        walked = 0
        for sheet in workbook.worksheets:
            grid: dict[tuple[int, int], str] = {}
            # The declared dimension can claim A1:XFD1048576 (an inflated sheet):
            # walk the rows actually stored instead.
            sheet.reset_dimensions()
            for row in sheet.iter_rows():
                walked += len(row)
                for cell in row:
                    text = _cell_text(getattr(cell, "value", None))
                    if text:
                        grid[(cell.row, cell.column)] = text  # type: ignore[index]
                        cells_read += 1
                if cells_read > MAX_CELLS or walked > MAX_STORED_CELLS:
                    warnings.append(
                        f"only the first {min(cells_read, MAX_CELLS)} non-empty cells were read"
                    )
                    break
            for ref in merged.get(sheet.title, []):
                min_col, min_row, max_col, max_row = range_boundaries(ref)
                value = grid.get((min_row, min_col))  # type: ignore[arg-type]
                if value:
                    for r in range(min_row, max_row + 1):  # type: ignore[operator]
                        for c in range(min_col, max_col + 1):  # type: ignore[operator]
                            grid.setdefault((r, c), value)
            blocks.append(
                Block(BlockKind.HEADING, sheet.title, Location(sheet=sheet.title), level=1)
            )
            blocks.extend(_tables(sheet.title, grid))
            if cells_read > MAX_CELLS or walked > MAX_STORED_CELLS:
                break
    finally:
        workbook.close()
    return Extracted(blocks=blocks, warnings=warnings, truncated=bool(warnings))


def _tables(sheet: str, grid: dict[tuple[int, int], str]) -> list[Block]:
    """Split a sheet into tables at fully empty rows; drop empty columns."""
    if not grid:
        return []
    rows = sorted({r for r, _ in grid})
    groups: list[list[int]] = [[rows[0]]]
    for r in rows[1:]:
        if r == groups[-1][-1] + 1:
            groups[-1].append(r)
        else:
            groups.append([r])
    blocks: list[Block] = []
    for group in groups:
        members = set(group)
        columns = sorted({c for (r, c) in grid if r in members})
        body = tuple(tuple(grid.get((r, c), "") for c in columns) for r in group)
        cell_range = (
            f"{get_column_letter(columns[0])}{group[0]}:{get_column_letter(columns[-1])}{group[-1]}"
        )
        location = Location(sheet=sheet, cell_range=cell_range)
        if len(body) == 1 and len(columns) == 1:
            blocks.append(Block(BlockKind.PARAGRAPH, body[0][0], location))
            continue
        table = Table(rows=body, header_rows=1)
        blocks.append(Block(BlockKind.TABLE, table.to_markdown(), location, table=table))
    return blocks
