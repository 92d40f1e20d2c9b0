"""PPTX with python-pptx: slide titles as headings, text frames as paragraphs
and list items (by indent level), tables as tables, charts' data as tables,
speaker notes marked as notes; every block located by slide number.

Shapes are read in reading order (top to bottom, left to right within a band),
not in the file's z-order: a deck built in any order reads as it is seen. A
slide without a title gets no invented heading; its location says the slide.
"""

from __future__ import annotations

from collections.abc import Iterator
from io import BytesIO
from typing import Any

from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

from groundwork.documents import Block, BlockKind, FailureReason, Location, Table
from groundwork.extract.base import Extracted, ExtractionContext, Refused, open_zip
from groundwork.extract.charts import chart_blocks, read_chart
from groundwork.extract.figures import FigureDescriber
from groundwork.extract.strict_ooxml import as_transitional, is_strict

_TITLES = {PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE, PP_PLACEHOLDER.VERTICAL_TITLE}


#: Shapes whose tops differ by less than this share of the slide's height are
#: one band, read left to right (text boxes side by side are rarely aligned
#: to the EMU).
_BAND = 0.05


def _position(shape: Any) -> tuple[int, int] | None:
    try:
        top, left = shape.top, shape.left
    except (ValueError, KeyError, AttributeError):
        return None
    return (int(top), int(left)) if top is not None and left is not None else None


def _reading_order(shapes: list[Any], band: int) -> list[Any]:
    """Top to bottom in bands, left to right within a band; shapes without a
    position keep their file order after the placed ones."""
    placed = sorted(
        ((position, i, s) for i, s in enumerate(shapes) if (position := _position(s))),
        key=lambda item: (item[0][0], item[1]),
    )
    ordered: list[Any] = []
    group: list[tuple[tuple[int, int], int, Any]] = []
    for item in placed:
        if group and item[0][0] - group[0][0][0] > band:
            ordered.extend(s for _, _, s in sorted(group, key=lambda g: (g[0][1], g[1])))
            group = []
        group.append(item)
    ordered.extend(s for _, _, s in sorted(group, key=lambda g: (g[0][1], g[1])))
    ordered.extend(s for s in shapes if _position(s) is None)
    return ordered


def _shapes(shapes: Any, band: int) -> Iterator[Any]:
    """Every shape in reading order, groups flattened in place; a shape whose
    kind python-pptx cannot name is still read for its text."""
    found = []
    for index in range(len(shapes)):
        try:
            found.append(shapes[index])
        except (NotImplementedError, ValueError, KeyError, AttributeError):
            continue
    for shape in _reading_order(found, band):
        try:
            kind = shape.shape_type
        except (NotImplementedError, ValueError, KeyError, AttributeError):
            kind = None
        if kind == MSO_SHAPE_TYPE.GROUP:
            yield from _shapes(shape.shapes, band)
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


def _figure(shape: Any, number: int, figures: FigureDescriber) -> list[Block]:
    """A picture's description by the vision model, located on its slide."""
    where = Location(slide=number, part=f"figure {figures.described + 1}")
    described = figures.describe(shape.image.blob, where)
    return [described] if described is not None else []


def _notes(slide: Any, number: int) -> list[Block]:
    """The slide's speaker notes, marked as notes."""
    if not slide.has_notes_slide:
        return []
    notes = slide.notes_slide.notes_text_frame
    if notes is None or not notes.text.strip():
        return []
    return [Block(BlockKind.PARAGRAPH, notes.text.strip(), Location(slide=number, part="notes"))]


def extract_pptx(data: bytes, ctx: ExtractionContext) -> Extracted:
    with open_zip(data, ctx.limits) as archive:
        if is_strict(archive):
            data = as_transitional(archive)
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
    band = int((deck.slide_height or 6_858_000) * _BAND)
    figures = FigureDescriber(ctx, warnings)
    for number, slide in enumerate(deck.slides, start=1):
        location = Location(slide=number)
        shapes = list(_shapes(slide.shapes, band))
        titles = [
            s for s in shapes if _is_title(s) and s.has_text_frame and s.text_frame.text.strip()
        ]
        if titles:
            slide_title = titles[0].text_frame.text.strip()
            title = title or slide_title
            blocks.append(Block(BlockKind.HEADING, slide_title, location, level=2))
        charts = 0
        for shape in shapes:
            if titles and shape is titles[0]:
                continue
            try:
                if getattr(shape, "has_chart", False) and shape.has_chart:
                    charts += 1
                    name = f"chart {charts}"
                    chart = read_chart(shape.chart_part.blob)
                    if chart is None:
                        warnings.append(f"slide {number}: no data could be read from {name}")
                    else:
                        blocks.extend(chart_blocks(chart, Location(slide=number, part=name)))
                    continue
                if getattr(shape, "has_table", False) and shape.has_table:
                    rows = _table_rows(shape.table)
                    if rows:
                        table = Table(rows=rows, header_rows=1)
                        blocks.append(
                            Block(BlockKind.TABLE, table.to_markdown(), location, table=table)
                        )
                    continue
                if figures.active and shape.shape_type == MSO_SHAPE_TYPE.PICTURE:
                    blocks.extend(_figure(shape, number, figures))
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
        blocks.extend(_notes(slide, number))
    figures.finish()
    return Extracted(blocks=blocks, warnings=warnings, title=title)
