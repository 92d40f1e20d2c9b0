"""DOCX with python-docx, walking the body XML in order.

python-docx's `Document.paragraphs` skips body-level content controls
(`w:sdt`); one real document scored 0.08 text similarity that way. So the
body is walked element by element, descending into content controls, and a
paragraph's text is every `w:t` inside it (runs, hyperlinks, inline controls).
"""

from __future__ import annotations

import re
from io import BytesIO
from typing import Any

import docx
from docx.oxml.ns import qn
from docx.table import Table as DocxTable

from groundwork.documents import Block, BlockKind, FailureReason, Location, Table
from groundwork.extract.base import Extracted, ExtractionContext, Refused, open_zip

_HEADING_STYLE = re.compile(r"^(?:heading|überschrift|titre)\s*(\d)$", re.IGNORECASE)
_W_P, _W_TBL, _W_SDT, _W_SDT_CONTENT = qn("w:p"), qn("w:tbl"), qn("w:sdt"), qn("w:sdtContent")
_W_T, _W_TAB, _W_BR = qn("w:t"), qn("w:tab"), qn("w:br")
_M_T, _W_TXBX = qn("m:t"), qn("w:txbxContent")
# Drawings carry their content twice (mc:Choice and a VML mc:Fallback): read one.
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"


def _paragraph_text(element: Any) -> str:
    """Every run's text (w:t), equation text (m:t), tabs and breaks, skipping
    text boxes (their paragraphs become blocks of their own) and fallbacks."""
    parts: list[str] = []

    def visit(node: Any) -> None:
        for child in node:
            tag = child.tag
            if tag in (_MC_FALLBACK, _W_TXBX):
                continue
            if tag in (_W_T, _M_T):
                parts.append(child.text or "")
            elif tag == _W_TAB:
                parts.append("\t")
            elif tag == _W_BR:
                parts.append("\n")
            visit(child)

    visit(element)
    return "".join(parts).strip()


def _text_boxes(element: Any) -> list[Any]:
    boxes = []
    for box in element.iter(_W_TXBX):
        parent = box.getparent()
        while parent is not None and parent is not element and parent.tag != _MC_FALLBACK:
            parent = parent.getparent()
        if parent is None or parent.tag != _MC_FALLBACK:
            boxes.append(box)
    return boxes


def _style_name(element: Any, styles: dict[str, str]) -> str:
    p_pr = element.find(qn("w:pPr"))
    if p_pr is None:
        return ""
    style = p_pr.find(qn("w:pStyle"))
    if style is None:
        return ""
    style_id = style.get(qn("w:val")) or ""
    return styles.get(style_id, style_id)


def _outline_level(element: Any) -> int | None:
    p_pr = element.find(qn("w:pPr"))
    if p_pr is None:
        return None
    outline = p_pr.find(qn("w:outlineLvl"))
    if outline is None:
        return None
    value = int(outline.get(qn("w:val")) or 9)
    return value + 1 if value < 9 else None


def _list_level(element: Any) -> int | None:
    p_pr = element.find(qn("w:pPr"))
    if p_pr is None:
        return None
    num = p_pr.find(qn("w:numPr"))
    if num is None:
        return None
    ilvl = num.find(qn("w:ilvl"))
    num_id = num.find(qn("w:numId"))
    if num_id is not None and num_id.get(qn("w:val")) == "0":
        return None  # numbering explicitly removed
    return int(ilvl.get(qn("w:val")) or 0) + 1 if ilvl is not None else 1


def extract_docx(data: bytes, ctx: ExtractionContext) -> Extracted:
    open_zip(data, ctx.limits).close()
    try:
        document = docx.Document(BytesIO(data))
    except Exception as exc:  # python-docx raises many types for damaged packages
        raise Refused(FailureReason.MALFORMED, f"not a readable DOCX: {exc}") from exc
    styles = {s.style_id: s.name or "" for s in document.styles if getattr(s, "style_id", None)}
    blocks: list[Block] = []
    counter = [0]
    title: str | None = None

    def add(block: Block) -> None:
        blocks.append(block)
        if len(blocks) > ctx.limits.max_blocks:
            raise _TooManyBlocks

    def paragraph(element: Any) -> None:
        paragraph_itself(element)
        for box in _text_boxes(element):
            walk(box)

    def paragraph_itself(element: Any) -> None:
        nonlocal title
        counter[0] += 1
        text = _paragraph_text(element)
        if not text:
            return
        location = Location(element=counter[0])
        style = _style_name(element, styles)
        match = _HEADING_STYLE.match(style.strip())
        level = int(match.group(1)) if match else _outline_level(element)
        if style.lower() == "title":
            level = 1
            title = title or text
        if level is not None:
            add(Block(BlockKind.HEADING, text, location, level=level))
            return
        list_level = _list_level(element)
        if list_level is None and style.lower().startswith("list"):
            digits = style.rstrip()[-1:]
            list_level = int(digits) if digits.isdigit() else 1  # "List Bullet 2" is nested
        if list_level is not None:
            add(Block(BlockKind.LIST_ITEM, text, location, level=list_level))
            return
        kind = BlockKind.CODE if "code" in style.lower() else BlockKind.PARAGRAPH
        add(Block(kind, text, location))

    def table(element: Any) -> None:
        counter[0] += 1
        rows: list[tuple[str, ...]] = []
        for row in DocxTable(element, document).rows:
            cells: list[str] = []
            for cell in row.cells:
                cells.append(
                    " ".join(t for p in cell._tc.iter(_W_P) if (t := _paragraph_text(p))).strip()
                )
            if any(cells):
                rows.append(tuple(cells))
        if rows:
            grid = Table(rows=tuple(rows), header_rows=1)
            add(
                Block(BlockKind.TABLE, grid.to_markdown(), Location(element=counter[0]), table=grid)
            )

    def walk(container: Any) -> None:
        for child in container.iterchildren():
            if child.tag == _W_P:
                paragraph(child)
            elif child.tag == _W_TBL:
                table(child)
            elif child.tag == _W_SDT:
                content = child.find(_W_SDT_CONTENT)
                if content is not None:
                    walk(content)

    warnings: list[str] = []
    try:
        walk(document.element.body)
        seen: set[str] = set()
        for section in document.sections:
            for part_name, part in (("header", section.header), ("footer", section.footer)):
                if part.is_linked_to_previous:
                    continue
                for element in part._element.iter(_W_P):
                    text = _paragraph_text(element)
                    if text and text not in seen:
                        seen.add(text)
                        add(Block(BlockKind.PARAGRAPH, text, Location(part=part_name)))
    except _TooManyBlocks:
        warnings.append(f"only the first {ctx.limits.max_blocks} blocks were kept")
    core_title = (document.core_properties.title or "").strip()
    return Extracted(
        blocks=blocks, warnings=warnings, title=core_title or title, truncated=bool(warnings)
    )


class _TooManyBlocks(Exception):
    pass
