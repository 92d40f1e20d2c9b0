"""PPTX with python-pptx: slide titles as headings, text frames as paragraphs
and list items (by indent level), tables as tables, speaker notes marked as
notes; every block located by slide number."""

from __future__ import annotations

from collections.abc import Iterator
from io import BytesIO
from typing import Any

from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

from groundwork.documents import Block, BlockKind, FailureReason, Location, Table
from groundwork.extract.base import Extracted, ExtractionContext, Refused, open_zip

_TITLES = {PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE, PP_PLACEHOLDER.VERTICAL_TITLE}


def _shapes(shapes: Any) -> Iterator[Any]:
    """Every shape, groups flattened; a shape python-pptx cannot model is skipped."""
    for index in range(len(shapes)):
        try:
            shape = shapes[index]
            kind = shape.shape_type
        except (NotImplementedError, ValueError, KeyError, AttributeError):
            continue
        if kind == MSO_SHAPE_TYPE.GROUP:
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _table_rows(table: Any) -> tuple[tuple[str, ...], ...]:
    """Cell text with merged ranges repeated in every cell they cover."""
    grid = [[cell.text.strip() for cell in row.cells] for row in table.rows]
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            if cell.is_merge_origin:
                for dr in range(cell.span_height):
                    for dc in range(cell.span_width):
                        if r + dr < len(grid) and c + dc < len(grid[r + dr]):
                            grid[r + dr][c + dc] = grid[r][c]
    return tuple(tuple(row) for row in grid if any(row))


def _is_title(shape: Any) -> bool:
    if not getattr(shape, "is_placeholder", False):
        return False
    try:
        return shape.placeholder_format.type in _TITLES
    except ValueError:
        return False


def extract_pptx(data: bytes, ctx: ExtractionContext) -> Extracted:
    open_zip(data, ctx.limits).close()
    try:
        deck = Presentation(BytesIO(data))
    except Exception as exc:  # python-pptx raises many types for damaged decks
        raise Refused(FailureReason.MALFORMED, f"not a readable PPTX: {exc}") from exc
    if len(deck.slides) > ctx.limits.max_pages:
        raise Refused(
            FailureReason.TOO_MANY_PAGES,
            f"{len(deck.slides)} slides; the limit is {ctx.limits.max_pages}",
        )
    blocks: list[Block] = []
    warnings: list[str] = []
    title: str | None = None
    for number, slide in enumerate(deck.slides, start=1):
        location = Location(slide=number)
        shapes = list(_shapes(slide.shapes))
        titles = [
            s for s in shapes if _is_title(s) and s.has_text_frame and s.text_frame.text.strip()
        ]
        slide_title = titles[0].text_frame.text.strip() if titles else f"Slide {number}"
        title = title or (slide_title if titles else None)
        blocks.append(Block(BlockKind.HEADING, slide_title, location, level=2))
        for shape in shapes:
            if titles and shape is titles[0]:
                continue
            try:
                if getattr(shape, "has_table", False) and shape.has_table:
                    rows = _table_rows(shape.table)
                    if rows:
                        table = Table(rows=rows, header_rows=1)
                        blocks.append(
                            Block(BlockKind.TABLE, table.to_markdown(), location, table=table)
                        )
                    continue
                if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
                    continue
                for paragraph in shape.text_frame.paragraphs:
                    text = (
                        "".join(run.text for run in paragraph.runs).strip()
                        or paragraph.text.strip()
                    )
                    if not text:
                        continue
                    if paragraph.level > 0:
                        blocks.append(
                            Block(BlockKind.LIST_ITEM, text, location, level=paragraph.level)
                        )
                    else:
                        blocks.append(Block(BlockKind.PARAGRAPH, text, location))
            except (ValueError, KeyError, AttributeError) as exc:
                warnings.append(f"slide {number}: a shape could not be read ({exc})")
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                blocks.append(
                    Block(
                        BlockKind.PARAGRAPH,
                        notes.text.strip(),
                        Location(slide=number, part="notes"),
                    )
                )
    return Extracted(blocks=blocks, warnings=warnings, title=title)
