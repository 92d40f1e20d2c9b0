"""What every format extractor shares: its context, its output, refusals and bounds."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from io import BytesIO

from groundwork.documents import Block, ExtractionFailure, ExtractionLimits, FailureReason
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
