"""Blocks to XLSX with openpyxl: the prose on a `Document` sheet (one block a
row in column A, headings bold), each table on a sheet of its own, every cell
written as text. Text, never a formula: a cell that starts with "=" stays the
characters the author wrote (a spreadsheet would otherwise evaluate what an
artifact's author, or a model, put there). A text longer than a cell holds
continues in the rows below. The XLSX extractor reads the sheets back as
tables, which is how fidelity is checked."""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import datetime

from openpyxl import Workbook
from openpyxl.cell.cell import Cell
from openpyxl.styles import Font
from openpyxl.worksheet.worksheet import Worksheet

from groundwork.documents import Block, BlockKind
from groundwork.render.office_text import MarkedText

CELL_CHARS = 32_000  # a cell holds 32,767 characters
_BOLD = Font(bold=True)


def _put(sheet: Worksheet, row: int, column: int, value: str) -> Cell:
    cell = sheet.cell(row=row, column=column)
    cell.value = value
    cell.data_type = "s"  # text, even when it starts with "="
    return cell


def render_xlsx(
    title: str, blocks: Sequence[Block], created: datetime
) -> tuple[bytes, tuple[str, ...]]:
    """(XLSX bytes, characters drawn as [U+XXXX] markers)."""
    text = MarkedText()
    book = Workbook()
    book.properties.title = text.clean(title)
    book.properties.creator = book.properties.lastModifiedBy = "Groundwork"
    book.properties.created = book.properties.modified = created.replace(tzinfo=None)
    prose = book.active
    assert prose is not None
    prose.title = "Document"
    prose.column_dimensions["A"].width = 100
    row, tables = 1, 0
    for block in blocks:
        if block.kind == BlockKind.TABLE and block.table is not None:
            tables += 1
            sheet = book.create_sheet(f"Table {tables}")
            for r, cells in enumerate(block.table.rows, start=1):
                for c, value in enumerate(cells, start=1):
                    cell = _put(sheet, r, c, text.clean(value)[:CELL_CHARS])
                    if r <= block.table.header_rows:
                        cell.font = _BOLD
            continue
        cleaned = text.clean(block.text)
        for start in range(0, len(cleaned), CELL_CHARS):
            cell = _put(prose, row, 1, cleaned[start : start + CELL_CHARS])
            if block.kind == BlockKind.HEADING:
                cell.font = _BOLD
            row += 1
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue(), tuple(text.missing)
