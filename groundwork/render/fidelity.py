"""Fidelity by an independent reader: a rendered PDF or DOCX is parsed back
with the extraction parsers, and every heading, paragraph, list item and
table cell of the source blocks must be found in what they read. Whitespace
is ignored (wrapping moves line breaks; a long word may be broken), every
other character counts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from groundwork.documents import Block, ExtractedDocument
from groundwork.extract import extract

_SPACE = re.compile(r"\s+")


def _squash(text: str) -> str:
    return _SPACE.sub("", text)


@dataclass(frozen=True, slots=True)
class FidelityReceipt:
    checked: int
    missing: tuple[str, ...]  # "heading: ...", "cell: ..."
    reader: str  # which parser read it back

    @property
    def passed(self) -> bool:
        return not self.missing

    def to_dict(self) -> dict[str, object]:
        return {
            "checked": self.checked,
            "missing": list(self.missing),
            "reader": self.reader,
            "passed": self.passed,
        }


def verify_rendering(
    blocks: Sequence[Block],
    data: bytes,
    media_type: str,
    filename: str,
    unrenderable: Sequence[str] = (),
) -> FidelityReceipt:
    """`unrenderable`: the U+XXXX the renderer reported and drew as visible
    markers; the expected text carries the same markers."""
    markers = {chr(int(code[2:], 16)): f"[{code}]" for code in unrenderable}

    def expected(text: str) -> str:
        return _squash("".join(markers.get(ch, ch) for ch in text))

    parsed = extract(data, media_type, filename)
    if not isinstance(parsed, ExtractedDocument):
        return FidelityReceipt(
            0, (f"unreadable: {parsed.reason.value}: {parsed.detail}",), media_type
        )
    text = _squash(
        " ".join(
            " ".join(" ".join(row) for row in b.table.rows) if b.table is not None else b.text
            for b in parsed.blocks
        )
    )
    checked = 0
    missing: list[str] = []
    for block in blocks:
        if block.table is not None:
            for row in block.table.rows:
                for cell in row:
                    if cell.strip():
                        checked += 1
                        if expected(cell) not in text:
                            missing.append(f"cell: {cell[:80]}")
        elif block.text.strip():
            checked += 1
            if expected(block.text) not in text:
                missing.append(f"{block.kind.value}: {block.text[:80]}")
    return FidelityReceipt(checked, tuple(missing), media_type)
