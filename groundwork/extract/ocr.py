"""OCR results into blocks: one paragraph block per recognised paragraph,
carrying its confidence and box, so low confidence stays visible downstream."""

from __future__ import annotations

from groundwork.documents import Block, BlockKind, Location
from groundwork.ports import OcrResult


def ocr_blocks(result: OcrResult, page: int | None = None) -> list[Block]:
    blocks: list[Block] = []
    for paragraph in result.paragraphs:
        text = " ".join(line.text for line in paragraph).strip()
        if not text:
            continue
        x0 = min(line.bbox[0] for line in paragraph)
        y0 = min(line.bbox[1] for line in paragraph)
        x1 = max(line.bbox[2] for line in paragraph)
        y1 = max(line.bbox[3] for line in paragraph)
        confidence = sum(line.confidence for line in paragraph) / len(paragraph)
        blocks.append(
            Block(
                BlockKind.PARAGRAPH,
                text,
                Location(page=page, bbox=(x0, y0, x1, y1)),
                confidence=round(confidence, 4),
            )
        )
    return blocks
