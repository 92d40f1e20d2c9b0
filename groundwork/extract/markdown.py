"""Markdown into blocks with markdown-it-py (CommonMark + GFM tables).

Token maps give source line ranges, which become block locations.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.token import Token

from groundwork.documents import Block, BlockKind, Location, Table


def _parser() -> MarkdownIt:
    # html on: raw HTML blocks become tokens of their own and are read by the
    # HTML extractor instead of surfacing as tag soup in paragraphs.
    return MarkdownIt("commonmark", {"html": True}).enable("table")


def _location(token: Token) -> Location:
    if token.map:
        return Location(line_start=token.map[0] + 1, line_end=token.map[1])
    return Location()


def markdown_blocks(text: str) -> list[Block]:
    tokens = _parser().parse(text)
    blocks: list[Block] = []
    list_depth = 0
    in_list_item = 0
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            list_depth += 1
        elif tok.type in ("bullet_list_close", "ordered_list_close"):
            list_depth -= 1
        elif tok.type == "list_item_open":
            in_list_item += 1
        elif tok.type == "list_item_close":
            in_list_item -= 1
        elif tok.type == "heading_open":
            inline = tokens[i + 1]
            heading_level = int(tok.tag[1])
            blocks.append(
                Block(
                    BlockKind.HEADING, inline.content.strip(), _location(tok), level=heading_level
                )
            )
            i += 3
            continue
        elif tok.type == "paragraph_open":
            inline = tokens[i + 1]
            content = inline.content.strip()
            if content:
                kind = BlockKind.LIST_ITEM if in_list_item else BlockKind.PARAGRAPH
                level: int | None = list_depth if in_list_item else None
                blocks.append(Block(kind, content, _location(tok), level=level))
            i += 3
            continue
        elif tok.type == "html_block":
            blocks.extend(_html_blocks(tok))
        elif tok.type in ("fence", "code_block"):
            if tok.content.strip():
                blocks.append(Block(BlockKind.CODE, tok.content.rstrip("\n"), _location(tok)))
        elif tok.type == "table_open":
            i, block = _table(tokens, i)
            if block is not None:
                blocks.append(block)
            continue
        i += 1
    return blocks


def _table(tokens: list[Token], start: int) -> tuple[int, Block | None]:
    location = _location(tokens[start])
    rows: list[tuple[str, ...]] = []
    header_rows = 0
    current: list[str] = []
    in_head = False
    i = start + 1
    while i < len(tokens) and tokens[i].type != "table_close":
        tok = tokens[i]
        if tok.type == "thead_open":
            in_head = True
        elif tok.type == "thead_close":
            in_head = False
        elif tok.type == "tr_open":
            current = []
        elif tok.type == "tr_close":
            rows.append(tuple(current))
            if in_head:
                header_rows += 1
        elif tok.type == "inline":
            current.append(tok.content.strip())
        i += 1
    if not rows:
        return i + 1, None
    table = Table(rows=tuple(rows), header_rows=max(header_rows, 1))
    return i + 1, Block(BlockKind.TABLE, table.to_markdown(), location, table=table)


def _html_blocks(token: Token) -> list[Block]:
    from groundwork.extract.html import html_fragment_blocks

    location = _location(token)
    return [
        Block(b.kind, b.text, location, level=b.level, table=b.table)
        for b in html_fragment_blocks(token.content)
    ]
