"""Blocks back to Markdown: for reading windows, exports and the extraction benchmark."""

from __future__ import annotations

from collections.abc import Iterable

from groundwork.documents import Block, BlockKind


def block_markdown(block: Block) -> str:
    if block.kind == BlockKind.HEADING:
        return f"{'#' * min(max(block.level or 1, 1), 6)} {block.text}"
    if block.kind == BlockKind.LIST_ITEM:
        return f"{'  ' * max((block.level or 1) - 1, 0)}- {block.text}"
    if block.kind == BlockKind.TABLE and block.table is not None:
        return block.table.to_markdown()
    if block.kind == BlockKind.CODE:
        return f"```\n{block.text}\n```"
    return block.text


def to_markdown(blocks: Iterable[Block]) -> str:
    parts: list[str] = []
    previous: Block | None = None
    for block in blocks:
        rendered = block_markdown(block)
        if previous is not None and previous.kind == block.kind == BlockKind.LIST_ITEM:
            parts[-1] += "\n" + rendered
        else:
            parts.append(rendered)
        previous = block
    return "\n\n".join(parts) + ("\n" if parts else "")
