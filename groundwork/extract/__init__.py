"""Extraction: bytes of one file version -> ExtractedDocument | ExtractionFailure.

Extractors never raise for a document's own problems; those are failure values
from the closed set in `groundwork.documents`. Bounds, titles and the
low-confidence rule are applied here, the same way for every format.
Infrastructure errors (an OCR engine missing, a store down) do raise.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from groundwork.documents import (
    Block,
    BlockKind,
    ExtractedDocument,
    ExtractionFailure,
    ExtractionLimits,
    ExtractionResult,
    FailureReason,
)
from groundwork.errors import GroundworkError
from groundwork.extract.base import Extracted, ExtractionContext, FormatExtractor, Refused
from groundwork.extract.markdown import markdown_blocks
from groundwork.extract.text import decode_text, plaintext_blocks
from groundwork.ports import OcrProvider, TranscriptionProvider, VisionProvider

LOW_CONFIDENCE_BELOW = 0.7

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
XLSM = "application/vnd.ms-excel.sheet.macroEnabled.12"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"


def _text_format(parse: Callable[[str], list[Block]]) -> FormatExtractor:
    def run(data: bytes, ctx: ExtractionContext) -> Extracted:
        text = decode_text(data)
        if text is None:
            raise Refused(FailureReason.MALFORMED, "the bytes are not text in any known encoding")
        warnings: list[str] = []
        truncated = False
        encoded = text.encode("utf-8")
        if len(encoded) > ctx.limits.max_text_bytes:
            text = encoded[: ctx.limits.max_text_bytes].decode("utf-8", errors="ignore")
            warnings.append(f"text truncated to the first {ctx.limits.max_text_bytes} bytes")
            truncated = True
        return Extracted(blocks=parse(text), warnings=warnings, truncated=truncated)

    return run


class _Deferred:
    """A format's extractor imported on its first document: an extraction
    worker starts in a fresh interpreter for every run, and importing every
    format's parsers (openpyxl, polars, python-pptx, python-docx...) before the
    first PDF cost ~1 s of each run's upload -> searchable time."""

    __slots__ = ("_name", "_module", "_function")

    def __init__(self, module: str, function: str) -> None:
        self._module, self._name = module, function
        self._function: FormatExtractor | None = None

    def __call__(self, data: bytes, ctx: ExtractionContext) -> Extracted:
        if self._function is None:
            module = importlib.import_module(f"groundwork.extract.{self._module}")
            self._function = getattr(module, self._name)
        return self._function(data, ctx)


_CSV = _Deferred("csv", "extract_csv")
_HTML = _Deferred("html", "extract_html")
_PDF = _Deferred("pdf", "extract_pdf")
_DOCX = _Deferred("docx", "extract_docx")
_XLSX = _Deferred("xlsx", "extract_xlsx")
_PPTX = _Deferred("pptx", "extract_pptx")
_IMAGE = _Deferred("image", "extract_image")
_MEDIA = _Deferred("media", "extract_media")

EXTRACTORS: dict[str, FormatExtractor] = {
    "text/markdown": _text_format(markdown_blocks),
    "text/plain": _text_format(plaintext_blocks),
    "text/csv": _CSV,
    "text/html": _HTML,
    "application/xhtml+xml": _HTML,
    "application/pdf": _PDF,
    DOCX: _DOCX,
    XLSX: _XLSX,
    XLSM: _XLSX,
    PPTX: _PPTX,
    "image/png": _IMAGE,
    "image/jpeg": _IMAGE,
    "image/tiff": _IMAGE,
    "image/webp": _IMAGE,
    "image/bmp": _IMAGE,
    "image/gif": _IMAGE,
    "audio/mpeg": _MEDIA,
    "audio/wav": _MEDIA,
    "audio/x-wav": _MEDIA,
    "audio/vnd.wave": _MEDIA,
    "audio/mp4": _MEDIA,
    "audio/x-m4a": _MEDIA,
    "audio/ogg": _MEDIA,
    "audio/flac": _MEDIA,
    "video/mp4": _MEDIA,
    "video/quicktime": _MEDIA,
    "video/webm": _MEDIA,
    "video/x-matroska": _MEDIA,
}

SUPPORTED_MEDIA_TYPES = frozenset(EXTRACTORS)

#: What content sniffing answers when content names no specific type.
_GENERIC_CONTENT = frozenset(
    {"text/plain", "application/octet-stream", "application/zip", "application/x-empty"}
)
#: Extensions that claim a binary format. Sniffing never lets them name the type
#: of generic content, so such a file arrives as text/plain or a bare ZIP; it is
#: not what its name says, and reading it as text would index a damaged file.
_BINARY_EXTENSIONS = frozenset(
    {".pdf", ".docx", ".xlsx", ".pptx", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"}
)


def _claims_binary(filename: str) -> str | None:
    extension = ("." + filename.rsplit(".", 1)[-1].lower()) if "." in filename else ""
    return extension if extension in _BINARY_EXTENSIONS else None


def extract(
    data: bytes,
    media_type: str,
    filename: str,
    limits: ExtractionLimits | None = None,
    ocr: OcrProvider | None = None,
    transcriber: TranscriptionProvider | None = None,
    vision: VisionProvider | None = None,
) -> ExtractionResult:
    limits = limits or ExtractionLimits()
    if not data:
        # no type at all: its own reason, not "unsupported type" or "malformed"
        return ExtractionFailure(FailureReason.EMPTY, "the file has 0 bytes")
    if len(data) > limits.max_bytes:
        return ExtractionFailure(
            FailureReason.TOO_LARGE, f"{len(data)} bytes; the limit is {limits.max_bytes} bytes"
        )
    claimed = _claims_binary(filename)
    if claimed is not None and media_type in _GENERIC_CONTENT:
        return ExtractionFailure(
            FailureReason.MALFORMED, f"the content is {media_type}, not a {claimed} file"
        )
    extractor = EXTRACTORS.get(media_type)
    if extractor is None:
        return ExtractionFailure(FailureReason.UNSUPPORTED_TYPE, f"no extractor for {media_type}")
    ctx = ExtractionContext(
        filename=filename, limits=limits, ocr=ocr, transcriber=transcriber, vision=vision
    )
    try:
        raw = extractor(data, ctx)
    except Refused as refusal:
        return refusal.failure
    except GroundworkError:
        raise
    except MemoryError:
        return ExtractionFailure(
            FailureReason.OUT_OF_MEMORY, "the document needs more memory than allowed"
        )
    except RecursionError:
        return ExtractionFailure(
            FailureReason.MALFORMED, "the document nests deeper than any real one"
        )
    except Exception as exc:  # a parser choking on hostile or damaged input
        return ExtractionFailure(FailureReason.MALFORMED, f"{type(exc).__name__}: {exc}"[:500])
    return finalize(raw, media_type, filename, limits)


@dataclass(frozen=True, slots=True)
class FormatParsers:
    """The DocumentParser every deployment has: one extractor per format
    (`EXTRACTORS`), with the recognition providers the deployment configured."""

    ocr: OcrProvider | None = None
    transcriber: TranscriptionProvider | None = None
    vision: VisionProvider | None = None

    @property
    def media_types(self) -> frozenset[str]:
        return SUPPORTED_MEDIA_TYPES

    def parse(
        self,
        data: bytes,
        media_type: str,
        filename: str,
        limits: ExtractionLimits | None = None,
    ) -> ExtractionResult:
        return extract(data, media_type, filename, limits, self.ocr, self.transcriber, self.vision)


def finalize(
    raw: Extracted, media_type: str, filename: str, limits: ExtractionLimits
) -> ExtractedDocument:
    blocks = [b for b in raw.blocks if b.text.strip() or b.table is not None]
    warnings = list(raw.warnings)
    truncated = raw.truncated
    if len(blocks) > limits.max_blocks:
        blocks = blocks[: limits.max_blocks]
        truncated = True
        warnings.append(f"only the first {limits.max_blocks} blocks were kept")
    total = 0
    for i, block in enumerate(blocks):
        total += len(block.text.encode("utf-8"))
        if total > limits.max_text_bytes:
            blocks = blocks[:i]
            truncated = True
            warnings.append(f"text truncated to about {limits.max_text_bytes} bytes")
            break
    if not blocks:
        warnings.append("no text was found in the document")
    scored = [b.confidence for b in blocks if b.confidence is not None]
    low_confidence = False
    if scored:
        mean = sum(scored) / len(scored)
        if mean < LOW_CONFIDENCE_BELOW:
            low_confidence = True
            warnings.append(
                f"low recognition confidence ({mean:.2f} mean, below {LOW_CONFIDENCE_BELOW}; OCR or "
                "transcription): check the text against the original"
            )
    return ExtractedDocument(
        title=raw.title or _title(blocks, filename),
        media_type=media_type,
        blocks=tuple(blocks),
        warnings=tuple(warnings),
        low_confidence=low_confidence,
        truncated=truncated,
    )


def _title(blocks: list[Block], filename: str) -> str:
    for block in blocks:
        if block.kind == BlockKind.HEADING:
            return block.text[:300]
    stem = filename.rsplit("/", 1)[-1]
    return stem.rsplit(".", 1)[0] if "." in stem else stem
