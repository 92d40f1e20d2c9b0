"""Plain text into paragraph blocks split on blank lines, with line locations."""

from __future__ import annotations

from groundwork.documents import Block, BlockKind, Location


def plaintext_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    buffer: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            if not buffer:
                start = number
            buffer.append(line.strip())
            continue
        if buffer:
            blocks.append(_paragraph(buffer, start, number - 1))
            buffer = []
    if buffer:
        blocks.append(_paragraph(buffer, start, start + len(buffer) - 1))
    return blocks


def _paragraph(lines: list[str], first: int, last: int) -> Block:
    return Block(BlockKind.PARAGRAPH, " ".join(lines), Location(line_start=first, line_end=last))
