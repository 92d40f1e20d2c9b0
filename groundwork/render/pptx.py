"""Blocks to PPTX with python-pptx: a title slide, then one slide per section
(a heading of level 1 or 2 starts one; deeper headings stay in the body as
bold paragraphs), list items as indented paragraphs, each table on a slide of
its own. A long section continues on further slides rather than overflowing
one without end. The PPTX extractor reads slide titles back as headings, body
paragraphs, list items and tables, which is how fidelity is checked."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pptx import Presentation
from pptx.util import Emu, Pt

from groundwork.documents import Block, BlockKind
from groundwork.render.office_text import MarkedText

_TITLE, _CONTENT, _TITLE_ONLY = 0, 1, 5
PARAGRAPHS_PER_SLIDE = 12


@dataclass(slots=True)
class _Section:
    heading: str
    body: list[Block] = field(default_factory=list)


def _sections(title: str, blocks: Sequence[Block]) -> list[_Section]:
    sections: list[_Section] = []
    for block in blocks:
        if block.kind == BlockKind.HEADING and (block.level or 1) <= 2:
            sections.append(_Section(block.text))
        else:
            if not sections:
                sections.append(_Section(title))
            sections[-1].body.append(block)
    return sections


def _text_slide(prs: object, heading: str, body: Sequence[Block], text: MarkedText) -> None:
    slide = prs.slides.add_slide(prs.slide_layouts[_CONTENT])  # type: ignore[attr-defined]
    slide.shapes.title.text = text.clean(heading)
    frame = slide.placeholders[1].text_frame
    for n, block in enumerate(body):
        paragraph = frame.paragraphs[0] if n == 0 else frame.add_paragraph()
        paragraph.text = text.clean(block.text)
        if block.kind == BlockKind.LIST_ITEM:
            paragraph.level = min(max(block.level or 1, 1), 4)
        elif block.kind == BlockKind.HEADING:
            for run in paragraph.runs:
                run.font.bold = True
        for run in paragraph.runs:
            run.font.size = Pt(16)


def _table_slide(prs: object, heading: str, block: Block, text: MarkedText) -> None:
    assert block.table is not None
    rows = block.table.rows
    width = max((len(r) for r in rows), default=0)
    if not rows or not width:
        return
    slide = prs.slides.add_slide(prs.slide_layouts[_TITLE_ONLY])  # type: ignore[attr-defined]
    slide.shapes.title.text = text.clean(heading)
    left, top = Emu(457200), Emu(1600200)
    size = (prs.slide_width - 2 * left, Emu(370840 * len(rows)))  # type: ignore[attr-defined]
    table = slide.shapes.add_table(len(rows), width, left, top, *size).table
    for r, row in enumerate(rows):
        for c in range(width):
            table.cell(r, c).text = text.clean(row[c] if c < len(row) else "")


def render_pptx(
    title: str, blocks: Sequence[Block], created: datetime
) -> tuple[bytes, tuple[str, ...]]:
    """(PPTX bytes, characters drawn as [U+XXXX] markers)."""
    text = MarkedText()
    prs = Presentation()
    props = prs.core_properties
    props.title, props.author, props.last_modified_by = (
        text.clean(title),
        "Groundwork",
        "Groundwork",
    )
    props.created = props.modified = created
    props.revision = 1
    cover = prs.slides.add_slide(prs.slide_layouts[_TITLE])
    cover.shapes.title.text = text.clean(title)
    for section in _sections(title, blocks):
        prose: list[Block] = []
        for block in section.body:
            if block.kind == BlockKind.TABLE and block.table is not None:
                _table_slide(prs, section.heading, block, text)
            elif block.text.strip():
                prose.append(block)
        if not prose and not section.body:
            _text_slide(prs, section.heading, (), text)
        for start in range(0, len(prose), PARAGRAPHS_PER_SLIDE):
            heading = section.heading if start == 0 else f"{section.heading} (continued)"
            _text_slide(prs, heading, prose[start : start + PARAGRAPHS_PER_SLIDE], text)
    buffer = io.BytesIO()
    prs.save(buffer)
    return buffer.getvalue(), tuple(text.missing)
