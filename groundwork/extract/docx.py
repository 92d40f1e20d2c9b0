"""DOCX with python-docx, walking the body XML in order.

python-docx's `Document.paragraphs` skips body-level content controls
(`w:sdt`); one real document scored 0.08 text similarity that way. So the
body is walked element by element, descending into content controls, and a
paragraph's text is every `w:t` inside it (runs, hyperlinks, inline controls).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO
from typing import Any

import docx
from docx.oxml.ns import qn

from groundwork.documents import Block, BlockKind, CellSpan, FailureReason, Location, Table
from groundwork.extract.base import Extracted, ExtractionContext, Refused, open_zip
from groundwork.extract.charts import C as CHART_NS
from groundwork.extract.charts import chart_blocks, read_chart
from groundwork.extract.docx_numbering import Numbering
from groundwork.extract.figures import FigureDescriber
from groundwork.extract.omml import omml_latex
from groundwork.extract.strict_ooxml import as_transitional, is_strict

_HEADING_STYLE = re.compile(r"^(?:heading|überschrift|titre)\s*(\d)$", re.IGNORECASE)
_W_P, _W_TBL, _W_SDT, _W_SDT_CONTENT = qn("w:p"), qn("w:tbl"), qn("w:sdt"), qn("w:sdtContent")
_W_T, _W_TAB, _W_BR = qn("w:t"), qn("w:tab"), qn("w:br")
_M_T, _W_TXBX = qn("m:t"), qn("w:txbxContent")
_M_MATH, _M_MATH_PARA = qn("m:oMath"), qn("m:oMathPara")
_W_TR, _W_TC, _W_TC_PR = qn("w:tr"), qn("w:tc"), qn("w:tcPr")
_W_GRID_SPAN, _W_V_MERGE, _W_VAL = qn("w:gridSpan"), qn("w:vMerge"), qn("w:val")
_W_TR_PR, _W_GRID_BEFORE, _W_CUSTOM_XML = qn("w:trPr"), qn("w:gridBefore"), qn("w:customXml")
_C_CHART, _R_ID = f"{{{CHART_NS}}}chart", qn("r:id")
_A_BLIP = qn("a:blip")
#: Tables nest inside cells; deeper than this, a nested table's text stays in
#: its cell (no real document nests 8 deep; a hostile one could nest thousands).
MAX_TABLE_DEPTH = 8
#: Columns a row may claim (gridSpan is attacker-controlled: 10^9 would build a huge row).
MAX_TABLE_COLUMNS = 1_000
# Drawings carry their content twice (mc:Choice and a VML mc:Fallback): read one.
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"


_W14 = "http://schemas.microsoft.com/office/word/2010/wordml"
_W14_CHECKBOX, _W14_CHECKED, _W14_VAL = (
    f"{{{_W14}}}checkbox",
    f"{{{_W14}}}checked",
    f"{{{_W14}}}val",
)
_W_SDT_PR, _W_FLD_CHAR, _W_FF_DATA = qn("w:sdtPr"), qn("w:fldChar"), qn("w:ffData")
_W_CHECK_BOX, _W_CHECKED, _W_DEFAULT = qn("w:checkBox"), qn("w:checked"), qn("w:default")


def _is_on(element: Any, attribute: str) -> bool:
    """An OOXML on/off value: present without a value means on."""
    return (element.get(attribute) or "1").lower() not in ("0", "false", "off")


def _checkbox_state(node: Any) -> bool | None:
    """Whether a checkbox (a Word 2010 content control, or a Word 97 form
    field's start) is checked; None when `node` is no checkbox."""
    if node.tag == _W_SDT:
        box = node.find(f"{_W_SDT_PR}/{_W14_CHECKBOX}")
        if box is None:
            return None
        checked = box.find(_W14_CHECKED)
        return checked is not None and _is_on(checked, _W14_VAL)
    if node.tag == _W_FLD_CHAR:
        box = node.find(f"{_W_FF_DATA}/{_W_CHECK_BOX}")
        if box is None:
            return None
        checked = box.find(_W_CHECKED)
        if checked is not None:
            return _is_on(checked, _W_VAL)
        default = box.find(_W_DEFAULT)
        return default is not None and _is_on(default, _W_VAL)
    return None


def _paragraph_text(element: Any, inline: bool = False) -> str:
    """Every run's text (w:t), tabs and breaks, skipping text boxes (their
    paragraphs become blocks of their own) and fallbacks.

    An equation is LaTeX (omml.py): between $ inside a sentence, between $$
    when it stands alone (a display equation, or a paragraph holding only
    equations, each on a line of its own) unless `inline` (a table cell). A checkbox is its state, written
    as Markdown writes a task ("[x]", "[ ]"): the glyph drawing it is
    whatever symbol the author picked (☒, ✔), and a Word 97 form field draws
    none in the text."""
    parts: list[tuple[str, str]] = []  # ("text" | "math" | "display", content)

    def visit(node: Any) -> None:
        for child in node:
            tag = child.tag
            if tag in (_MC_FALLBACK, _W_TXBX):
                continue
            if tag in (_W_SDT, _W_FLD_CHAR):
                state = _checkbox_state(child)
                if state is not None:
                    parts.append(("text", "[x]" if state else "[ ]"))
                    continue
            if tag == _M_MATH_PARA:
                parts.extend(("display", omml_latex(m)) for m in child.iter(_M_MATH))
                continue
            if tag == _M_MATH:
                parts.append(("math", omml_latex(child)))
                continue
            if tag in (_W_T, _M_T):
                parts.append(("text", child.text or ""))
            elif tag == _W_TAB:
                parts.append(("text", "\t"))
            elif tag == _W_BR:
                parts.append(("text", "\n"))
            visit(child)

    visit(element)
    alone = not any(kind == "text" and text.strip() for kind, text in parts)
    out: list[str] = []
    for kind, text in parts:
        if kind == "text":
            out.append(text)
        elif text and not inline and (kind == "display" or alone):
            out.append(("\n" if out else "") + f"$${text}$$")
        elif text:
            out.append(f"${text}$")
    return "".join(out).strip()


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


def _numbering_reference(p_pr: Any) -> tuple[str, int] | None:
    num = p_pr.find(qn("w:numPr")) if p_pr is not None else None
    if num is None:
        return None
    num_id, ilvl = num.find(qn("w:numId")), num.find(qn("w:ilvl"))
    try:
        level = int(ilvl.get(qn("w:val"))) if ilvl is not None else 0
    except (TypeError, ValueError):
        level = 0
    return ((num_id.get(qn("w:val")) or "") if num_id is not None else "", level)


def _style_numbering(document: Any) -> dict[str, tuple[str, int]]:
    """styleId -> the numbering its paragraphs get (numbered heading styles),
    following w:basedOn a few steps."""
    own: dict[str, tuple[str | None, tuple[str, int] | None]] = {}
    for style in document.styles.element.iterfind(qn("w:style")):
        based = style.find(qn("w:basedOn"))
        own[style.get(qn("w:styleId")) or ""] = (
            based.get(qn("w:val")) if based is not None else None,
            _numbering_reference(style.find(qn("w:pPr"))),
        )
    resolved: dict[str, tuple[str, int]] = {}
    for style_id in own:
        current: str | None = style_id
        for _ in range(8):
            if current is None or current not in own:
                break
            parent, reference = own[current]
            if reference is not None:
                if reference[0]:
                    resolved[style_id] = reference
                break
            current = parent
    return resolved


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


def _content(container: Any, tag: str) -> list[Any]:
    """Children with `tag`, looking through content controls and custom XML
    (rows and cells can sit inside either)."""
    found: list[Any] = []
    for child in container.iterchildren():
        if child.tag == tag:
            found.append(child)
        elif child.tag == _W_SDT:
            content = child.find(_W_SDT_CONTENT)
            if content is not None:
                found.extend(_content(content, tag))
        elif child.tag == _W_CUSTOM_XML:
            found.extend(_content(child, tag))
    return found


def _int_property(parent: Any, tag: str, default: int) -> int:
    element = parent.find(tag) if parent is not None else None
    try:
        return max(1, int(element.get(_W_VAL))) if element is not None else default
    except (TypeError, ValueError):
        return default


ParagraphText = Callable[[Any], str]


def _cell_text(cell: Any, flatten_tables: bool, text_of: ParagraphText) -> str:
    """A cell's paragraphs joined (each as `text_of` reads it: numbered items
    keep their numbers); a nested table's text only when it is not extracted
    as a table of its own."""
    paragraphs = _content(cell, _W_P)
    if flatten_tables:
        paragraphs = list(cell.iter(_W_P))
    return " ".join(t for p in paragraphs if (t := text_of(p))).strip()


@dataclass(slots=True)
class _Grid:
    """A w:tbl laid out on its column grid: text per grid cell (a merged cell's
    text in every cell it covers), the merges, and the cells' elements."""

    rows: list[list[str]]
    spans: list[CellSpan]
    cells: list[Any]


def _grid(
    table: Any, flatten_tables: bool, text_of: ParagraphText = lambda p: _paragraph_text(p, True)
) -> _Grid:
    """Lay the rows out by w:gridSpan (horizontal merges) and w:vMerge (a
    "restart" cell continued by the cells below it), as Word draws them."""
    rows: list[list[str]] = []
    origins: dict[tuple[int, int], list[int]] = {}  # (row, column) -> [rows, columns]
    owner: dict[int, tuple[int, int]] = {}  # column -> the merge origin above it
    cells: list[Any] = []
    for r, tr in enumerate(_content(table, _W_TR)):
        row: list[str] = []
        column = min(_int_property(tr.find(_W_TR_PR), _W_GRID_BEFORE, 0), MAX_TABLE_COLUMNS)
        row.extend([""] * column)
        for tc in _content(tr, _W_TC):
            properties = tc.find(_W_TC_PR)
            span = _int_property(properties, _W_GRID_SPAN, 1)
            span = max(1, min(span, MAX_TABLE_COLUMNS - column))
            if column >= MAX_TABLE_COLUMNS:
                break
            merge = properties.find(_W_V_MERGE) if properties is not None else None
            origin = owner.get(column)
            if merge is not None and merge.get(_W_VAL) in (None, "continue") and origin:
                extent = origins[origin]
                extent[0] = r - origin[0] + 1
                text = rows[origin[0]][origin[1]]
            else:
                text = _cell_text(tc, flatten_tables, text_of)
                origin = (r, column)
                origins[origin] = [1, span]
                cells.append(tc)
                for c in range(column, column + span):
                    owner[c] = origin
            row.extend([text] * span)
            column += span
        rows.append(row)
    width = max((len(row) for row in rows), default=0)
    for row in rows:
        row.extend([""] * (width - len(row)))
    spans = [
        CellSpan(r, c, extent[0], extent[1])
        for (r, c), extent in sorted(origins.items())
        if (extent[0] > 1 or extent[1] > 1) and rows[r][c]
    ]
    return _Grid(rows=rows, spans=spans, cells=cells)


def _kept_rows(grid: _Grid) -> Table | None:
    """The grid without its empty rows (spacers), spans renumbered to match."""
    kept = [i for i, row in enumerate(grid.rows) if any(row)]
    if not kept:
        return None
    index = {old: new for new, old in enumerate(kept)}
    spans = tuple(
        CellSpan(
            index[s.row], s.column, sum(1 for i in kept if s.row <= i < s.row + s.rows), s.columns
        )
        for s in grid.spans
        if s.row in index
    )
    return Table(rows=tuple(tuple(grid.rows[i]) for i in kept), header_rows=1, spans=spans)


def _charts(element: Any, tag: str = _C_CHART) -> list[Any]:
    """Chart references (c:chart r:id), or pictures (a:blip r:embed), in a
    paragraph, skipping fallbacks."""
    found = []
    for chart in element.iter(tag):
        parent = chart.getparent()
        while parent is not None and parent is not element and parent.tag != _MC_FALLBACK:
            parent = parent.getparent()
        if parent is None or parent.tag != _MC_FALLBACK:
            found.append(chart)
    return found


def extract_docx(data: bytes, ctx: ExtractionContext) -> Extracted:
    with open_zip(data, ctx.limits) as archive:
        if is_strict(archive):
            data = as_transitional(archive)
    try:
        document = docx.Document(BytesIO(data))
    except Exception as exc:  # python-docx raises many types for damaged packages
        raise Refused(FailureReason.MALFORMED, f"not a readable DOCX: {exc}") from exc
    styles = {s.style_id: s.name or "" for s in document.styles if getattr(s, "style_id", None)}
    blocks: list[Block] = []
    counter = [0]
    charts_seen = [0]
    try:
        numbering = Numbering.read(document.part.numbering_part.element)
    except (KeyError, NotImplementedError, AttributeError):
        numbering = Numbering()
    style_numbering = _style_numbering(document)
    warnings: list[str] = []
    figures = FigureDescriber(ctx, warnings)
    truncated = False
    title: str | None = None

    def add(block: Block) -> None:
        blocks.append(block)
        if len(blocks) > ctx.limits.max_blocks:
            raise _TooManyBlocks

    def paragraph(element: Any) -> None:
        paragraph_itself(element)
        for box in _text_boxes(element):
            walk(box)
        for reference in _charts(element):
            charts_seen[0] += 1
            name = f"chart {charts_seen[0]}"
            part = document.part.related_parts.get(reference.get(_R_ID) or "")
            chart = read_chart(part.blob) if part is not None else None
            if chart is None:
                warnings.append(f"{name}: no data could be read from the chart")
                continue
            for block in chart_blocks(chart, Location(element=counter[0], part=name)):
                add(block)
        for blip in _charts(element, _A_BLIP) if figures.active else []:
            part = document.part.related_parts.get(blip.get(qn("r:embed")) or "")
            where = Location(element=counter[0], part=f"figure {figures.described + 1}")
            described = figures.describe(part.blob, where) if part is not None else None
            if described is not None:
                add(described)

    def numbered_text(element: Any, inline: bool = False) -> str:
        """The paragraph's text after the number Word draws before it."""
        text = _paragraph_text(element, inline)
        p_pr = element.find(qn("w:pPr"))
        reference = _numbering_reference(p_pr)
        if reference is None or not reference[0]:
            style_tag = p_pr.find(qn("w:pStyle")) if p_pr is not None else None
            style_id = style_tag.get(qn("w:val")) if style_tag is not None else None
            inherited = style_numbering.get(style_id or "")
            if inherited is not None:
                reference = (inherited[0], reference[1] if reference else inherited[1])
        if reference is not None and reference[0] not in ("", "0"):
            # counted even when empty: Word numbers an empty paragraph too
            label = numbering.label(*reference)
            if label and text:
                text = f"{label} {text}"
        return text

    def paragraph_itself(element: Any) -> None:
        nonlocal title
        counter[0] += 1
        text = numbered_text(element)
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

    def table(element: Any, depth: int = 1) -> None:
        nested_allowed = depth < MAX_TABLE_DEPTH
        # read once without numbering first: numbers count as they are read
        grid = _grid(element, flatten_tables=not nested_allowed)
        if len(grid.cells) == 1 and nested_allowed:
            # One cell: a frame drawn around content (a boxed note, a layout
            # wrapper), read as the content it holds rather than a 1x1 table.
            walk(grid.cells[0], depth + 1)
            return
        grid = _grid(
            element,
            flatten_tables=not nested_allowed,
            text_of=lambda p: numbered_text(p, inline=True),
        )
        counter[0] += 1
        grid_table = _kept_rows(grid)
        if grid_table is not None:
            add(
                Block(
                    BlockKind.TABLE,
                    grid_table.to_markdown(),
                    Location(element=counter[0]),
                    table=grid_table,
                )
            )
        if nested_allowed:
            for cell in grid.cells:
                for inner in _content(cell, _W_TBL):
                    table(inner, depth + 1)

    def walk(container: Any, depth: int = 0) -> None:
        for child in container.iterchildren():
            if child.tag == _W_P:
                paragraph(child)
            elif child.tag == _W_TBL:
                table(child, depth + 1)
            elif child.tag == _W_SDT:
                content = child.find(_W_SDT_CONTENT)
                if content is not None:
                    walk(content, depth)

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
        truncated = True
        warnings.append(f"only the first {ctx.limits.max_blocks} blocks were kept")
    figures.finish()
    core_title = (document.core_properties.title or "").strip()
    return Extracted(
        blocks=blocks, warnings=warnings, title=core_title or title, truncated=truncated
    )


class _TooManyBlocks(Exception):
    pass
