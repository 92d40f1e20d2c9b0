"""Extraction: bytes of one file version -> ExtractedDocument | ExtractionFailure.

Extractors never raise for a document's own problems; those are failure values
from the closed set in `groundwork.documents`. Limits are checked here, before
and after parsing, so every extractor is bounded the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from charset_normalizer import from_bytes

from groundwork.documents import (
    Block,
    ExtractedDocument,
    ExtractionFailure,
    ExtractionLimits,
    ExtractionResult,
    FailureReason,
)
from groundwork.extract.markdown import markdown_blocks
from groundwork.extract.plaintext import plaintext_blocks

TextExtractor = Callable[[str], list[Block]]

#: Media types with an extractor. Everything else is `unsupported-type` for now.
TEXT_EXTRACTORS: dict[str, TextExtractor] = {
    "text/markdown": markdown_blocks,
    "text/plain": plaintext_blocks,
}

SUPPORTED_MEDIA_TYPES = frozenset(TEXT_EXTRACTORS)


def extract(
    data: bytes, media_type: str, filename: str, limits: ExtractionLimits | None = None
) -> ExtractionResult:
    limits = limits or ExtractionLimits()
    if len(data) > limits.max_bytes:
        return ExtractionFailure(
            FailureReason.TOO_LARGE, f"{len(data)} bytes; the limit is {limits.max_bytes} bytes"
        )
    extractor = TEXT_EXTRACTORS.get(media_type)
    if extractor is None:
        return ExtractionFailure(FailureReason.UNSUPPORTED_TYPE, f"no extractor for {media_type}")
    text = _decode(data)
    if text is None:
        return ExtractionFailure(
            FailureReason.MALFORMED, "the bytes are not text in any known encoding"
        )
    warnings: list[str] = []
    truncated = False
    encoded = text.encode("utf-8")
    if len(encoded) > limits.max_text_bytes:
        text = encoded[: limits.max_text_bytes].decode("utf-8", errors="ignore")
        truncated = True
        warnings.append(f"text truncated to the first {limits.max_text_bytes} bytes")
    blocks = extractor(text)
    if len(blocks) > limits.max_blocks:
        blocks = blocks[: limits.max_blocks]
        truncated = True
        warnings.append(f"only the first {limits.max_blocks} blocks were kept")
    return ExtractedDocument(
        title=_title(blocks, filename),
        media_type=media_type,
        blocks=tuple(blocks),
        warnings=tuple(warnings),
        truncated=truncated,
    )


def _decode(data: bytes) -> str | None:
    if not data:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if b"\x00" in data[:8192]:
        return None
    best = from_bytes(data).best()
    return str(best) if best is not None else None


def _title(blocks: list[Block], filename: str) -> str:
    for block in blocks:
        if block.kind == "heading":
            return block.text[:300]
    stem = filename.rsplit("/", 1)[-1]
    return stem.rsplit(".", 1)[0] if "." in stem else stem
