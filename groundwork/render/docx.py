"""Blocks to DOCX with python-docx: real heading styles, list paragraphs and
tables, so the DOCX extractor reads the structure back."""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import datetime

from docx import Document

from groundwork.documents import Block, BlockKind


def render_docx(title: str, blocks: Sequence[Block], created: datetime) -> bytes:
    document = Document()
    properties = document.core_properties
    properties.title = title
    properties.author = "Groundwork"
    properties.created = created
    properties.modified = created
    properties.last_modified_by = "Groundwork"
    properties.revision = 1
    for block in blocks:
        if block.kind == BlockKind.HEADING:
            document.add_heading(block.text, level=min(max(block.level or 1, 1), 9))
        elif block.kind == BlockKind.LIST_ITEM:
            document.add_paragraph(block.text, style="List Bullet")
        elif block.kind == BlockKind.TABLE and block.table is not None:
            rows = block.table.rows
            width = max((len(r) for r in rows), default=0)
            if not rows or not width:
                continue
            table = document.add_table(rows=len(rows), cols=width)
            table.style = "Table Grid"
            # row by row: table.cell(r, c) rescans the grid on every call (quadratic)
            for row, line in zip(rows, table.rows, strict=True):
                for c, cell in enumerate(line.cells):
                    cell.text = row[c] if c < len(row) else ""
        else:
            document.add_paragraph(block.text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()
