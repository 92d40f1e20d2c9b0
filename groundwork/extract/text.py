"""Plain text: decoding bytes of unknown encoding, and paragraphs split on blank
lines with line locations."""

from __future__ import annotations

from charset_normalizer import from_bytes

from groundwork.documents import Block, BlockKind, Location


def decode_text(data: bytes) -> str | None:
    """UTF-8 first (with or without BOM); otherwise charset detection; None for binary."""
    if not data:
        return ""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    if b"\x00" in data[:8192]:
        return None
    best = from_bytes(data[: 4 * 1024 * 1024]).best()
    if best is None:
        return None
    return data.decode(best.encoding, errors="replace")


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
