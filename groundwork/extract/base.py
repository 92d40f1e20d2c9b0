"""What every format extractor shares: its context, its output, refusals and bounds."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from io import BytesIO
from typing import Protocol, runtime_checkable

from groundwork.documents import (
    Block,
    ExtractionFailure,
    ExtractionLimits,
    ExtractionResult,
    FailureReason,
)
from groundwork.ports import OcrProvider, TranscriptionProvider, VisionProvider

#: OOXML archives: the inflated size and the entry count are bounded before parsing.
MAX_INFLATED_BYTES = 512 * 1024 * 1024
MAX_ZIP_ENTRIES = 20_000
MAX_COMPRESSION_RATIO = 400


@dataclass(frozen=True, slots=True)
class ExtractionContext:
    filename: str
    limits: ExtractionLimits
    ocr: OcrProvider | None = None
    transcriber: TranscriptionProvider | None = None
    vision: VisionProvider | None = None  # configured model endpoint, else None


@dataclass(slots=True)
class Extracted:
    """A format extractor's raw output, before the shared bounds and title rules."""

    blocks: list[Block]
    warnings: list[str] = field(default_factory=list)
    title: str | None = None
    truncated: bool = False


class Refused(Exception):
    """Raised inside an extractor to stop with a failure value from the closed set."""

    def __init__(self, reason: FailureReason, detail: str = "") -> None:
        super().__init__(detail)
        self.failure = ExtractionFailure(reason, detail)


FormatExtractor = Callable[[bytes, ExtractionContext], Extracted]


@runtime_checkable
class DocumentParser(Protocol):
    """Bytes of one file version to an ExtractedDocument or an ExtractionFailure.

    A port so a format can be read by another parser (a layout model, a
    hosted service) without the extraction stage changing. Contract
    (tests/conformance/test_document_parser.py):
    - Never raises for the document's own problems: empty bytes are
      FailureReason.EMPTY, bytes over `limits.max_bytes` are TOO_LARGE before
      any parsing, a type outside `media_types` is UNSUPPORTED_TYPE, damaged
      or hostile bytes are MALFORMED. Infrastructure errors (an OCR engine
      missing) do raise, as GroundworkError.
    - A document's blocks, text and block count stay within `limits`
      (truncation is said in `truncated` and a warning).
    - Deterministic: the same bytes give the same document.
    """

    @property
    def media_types(self) -> frozenset[str]:
        """The exact media types it reads (as sniffed, never guessed from a name)."""
        ...

    def parse(
        self,
        data: bytes,
        media_type: str,
        filename: str,
        limits: ExtractionLimits | None = None,
    ) -> ExtractionResult: ...


def open_zip(data: bytes, limits: ExtractionLimits) -> zipfile.ZipFile:
    """Open an OOXML container after checking it cannot inflate past the ceiling."""
    try:
        archive = zipfile.ZipFile(BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise Refused(FailureReason.MALFORMED, f"not a readable ZIP container: {exc}") from exc
    entries = archive.infolist()
    if len(entries) > MAX_ZIP_ENTRIES:
        raise Refused(
            FailureReason.TOO_LARGE, f"{len(entries)} entries; the limit is {MAX_ZIP_ENTRIES}"
        )
    inflated = sum(e.file_size for e in entries)
    ceiling = min(MAX_INFLATED_BYTES, limits.max_bytes * 50)
    if inflated > ceiling:
        raise Refused(
            FailureReason.TOO_LARGE, f"inflates to {inflated} bytes; the ceiling is {ceiling} bytes"
        )
    for entry in entries:
        if entry.file_size > 10_000_000 and entry.file_size > MAX_COMPRESSION_RATIO * max(
            1, entry.compress_size
        ):
            raise Refused(
                FailureReason.TOO_LARGE,
                f"{entry.filename} is compressed {entry.file_size // max(1, entry.compress_size)}:1 (a ZIP bomb)",
            )
    return archive
