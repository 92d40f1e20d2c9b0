"""HTML with selectolax (lexbor), a real HTML5 parser: scripts, styles and
templates dropped; headings, paragraphs, list items (with nesting depth),
tables (header rows from <thead>/<th>, row and column spans laid out on the
grid: html_tables.py) and preformatted code kept as blocks."""

from __future__ import annotations

from typing import Any

from selectolax.lexbor import LexborHTMLParser

from groundwork.documents import Block, BlockKind, FailureReason, Location, Table
from groundwork.extract.base import Extracted, ExtractionContext, Refused
from groundwork.extract.html_tables import clean as _clean
from groundwork.extract.html_tables import html_table
from groundwork.extract.text import decode_text

DROP = ["script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "head"]
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
CONTAINERS = {
    "p", "div", "section", "article", "main", "header", "footer", "aside", "nav", "blockquote",
    "figure", "figcaption", "form", "fieldset", "address", "details", "summary", "dl", "dt", "dd",
    "center", "body", "html", "hr", "caption", "legend", "menu",
}  # fmt: skip
LISTS = {"ul", "ol"}


class _Walker:
    def __init__(self, max_blocks: int) -> None:
        self.blocks: list[Block] = []
        self.buffer: list[str] = []
        self.element = 0
        self.max_blocks = max_blocks

    def add(
        self, kind: BlockKind, text: str, level: int | None = None, table: Table | None = None
    ) -> None:
        if len(self.blocks) >= self.max_blocks:
            raise _Full
        self.element += 1
        self.blocks.append(
            Block(kind, text, Location(element=self.element), level=level, table=table)
        )

    def flush(self) -> None:
        text = _clean("".join(self.buffer))
        self.buffer = []
        if text:
            self.add(BlockKind.PARAGRAPH, text)

    def walk(self, node: Any, depth: int) -> None:
        for child in node.iter(include_text=True):
            tag = child.tag
            if tag == "-text":
                self.buffer.append(child.text(deep=False) or "")
            elif tag in HEADINGS:
                self.flush()
                text = _clean(child.text(deep=True, separator=" "))
                if text:
                    self.add(BlockKind.HEADING, text, level=HEADINGS[tag])
            elif tag in LISTS:
                self.flush()
                self.walk(child, depth + 1)
            elif tag == "li":
                self.flush()
                self.list_item(child, max(depth, 1))
            elif tag == "table":
                self.flush()
                self.table(child)
            elif tag == "pre":
                self.flush()
                code = (child.text(deep=True) or "").strip("\n")
                if code.strip():
                    self.add(BlockKind.CODE, code)
            elif tag == "br":
                self.buffer.append("\n")
            elif tag in CONTAINERS:
                self.flush()
                self.walk(child, depth)
                self.flush()
            elif tag in ("img",):
                alt = _clean(child.attributes.get("alt") or "")
                if alt:
                    self.buffer.append(f" {alt} ")
            elif tag != "-comment":
                # inline element: descend so block-level children (bad but common HTML) still split
                self.walk_inline(child, depth)

    def walk_inline(self, node: Any, depth: int) -> None:
        for child in node.iter(include_text=True):
            if child.tag == "-text":
                self.buffer.append(child.text(deep=False) or "")
            elif child.tag in HEADINGS or child.tag in LISTS or child.tag in ("table", "pre", "li"):
                self.walk(_Single(child), depth)
            elif child.tag in CONTAINERS:
                self.flush()
                self.walk(child, depth)
                self.flush()
            elif child.tag == "br":
                self.buffer.append("\n")
            elif child.tag != "-comment":
                self.walk_inline(child, depth)

    def list_item(self, node: Any, depth: int) -> None:
        parts: list[str] = []
        nested: list[Any] = []
        for child in node.iter(include_text=True):
            if child.tag in LISTS or child.tag == "table":
                nested.append(child)
            elif child.tag == "-text":
                parts.append(child.text(deep=False) or "")
            else:
                parts.append(" " + (child.text(deep=True, separator=" ") or "") + " ")
        text = _clean("".join(parts))
        if text:
            self.add(BlockKind.LIST_ITEM, text, level=depth)
        for child in nested:
            if child.tag == "table":
                self.table(child)
            else:
                self.walk(child, depth + 1)

    def table(self, node: Any) -> None:
        table = html_table(node, _nearest_table)
        if table is not None:
            self.add(BlockKind.TABLE, table.to_markdown(), table=table)


class _Single:
    """Adapts one node so `walk` treats it as the only child."""

    def __init__(self, node: Any) -> None:
        self.node = node

    def iter(self, include_text: bool = True) -> list[Any]:
        return [self.node]


def _nearest_table(node: Any) -> Any:
    parent = node.parent
    while parent is not None and parent.tag != "table":
        parent = parent.parent
    return parent


class _Full(Exception):
    pass


def extract_html(data: bytes, ctx: ExtractionContext) -> Extracted:
    text = decode_text(data)
    if text is None:
        raise Refused(FailureReason.MALFORMED, "the bytes are not text in any known encoding")
    tree = LexborHTMLParser(text)
    title_node = tree.css_first("title")
    title = _clean(title_node.text()) if title_node is not None else None
    tree.strip_tags(DROP)
    root = tree.body or tree.root
    walker = _Walker(ctx.limits.max_blocks)
    warnings: list[str] = []
    if root is not None:
        try:
            walker.walk(root, 0)
            walker.flush()
        except _Full:
            warnings.append(f"only the first {ctx.limits.max_blocks} blocks were kept")
    return Extracted(
        blocks=walker.blocks, warnings=warnings, title=title or None, truncated=bool(warnings)
    )


def html_fragment_blocks(fragment: str, max_blocks: int = 10_000) -> list[Block]:
    """Blocks of an HTML fragment (raw HTML inside Markdown)."""
    tree = LexborHTMLParser(fragment)
    tree.strip_tags(DROP)
    root = tree.body or tree.root
    walker = _Walker(max_blocks)
    if root is not None:
        try:
            walker.walk(root, 0)
            walker.flush()
        except _Full:
            pass
    return walker.blocks
