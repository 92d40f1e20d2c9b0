"""The killable extraction worker: timeouts from outside, bombs, hostile bytes."""

from __future__ import annotations

import random
import shutil
import time

import pytest

from groundwork.documents import (
    ExtractedDocument,
    ExtractionFailure,
    ExtractionLimits,
    FailureReason,
)
from groundwork.extract import DOCX, PPTX, XLSX
from resources.engines.extraction_worker import ExtractionWorker
from testbed import documents as make


@pytest.fixture(scope="module")
def worker() -> ExtractionWorker:
    w = ExtractionWorker()
    yield w  # type: ignore[misc]
    w.close()


def test_the_worker_extracts_like_the_core(worker: ExtractionWorker) -> None:
    result = worker(make.report_pdf(), "application/pdf", "r.pdf")
    assert isinstance(result, ExtractedDocument)
    assert result.blocks[0].text == "Quarterly Review Part 1"


@pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="tesseract-ocr is not installed (./run installs it)"
)
def test_a_slow_extraction_is_killed_at_the_timeout_and_the_next_file_still_works(
    worker: ExtractionWorker,
) -> None:
    big_scan = make.png(make.text_image(make.SCAN_LINES * 12, size=(4000, 5000)))
    started = time.monotonic()
    result = worker(big_scan, "image/png", "big.png", ExtractionLimits(timeout_seconds=0.5))
    elapsed = time.monotonic() - started
    assert isinstance(result, ExtractionFailure) and result.reason == FailureReason.TIMED_OUT
    assert elapsed < 5
    after = worker(b"# Still alive\n\ntext\n", "text/markdown", "a.md")
    assert isinstance(after, ExtractedDocument) and after.title == "Still alive"


def test_a_zip_bomb_is_refused_with_bounded_memory(worker: ExtractionWorker) -> None:
    result = worker(make.zip_bomb_docx(), DOCX, "bomb.docx")
    assert isinstance(result, ExtractionFailure) and result.reason == FailureReason.TOO_LARGE


def _mutations(data: bytes, rng: random.Random, count: int) -> list[bytes]:
    out = []
    for _ in range(count):
        cut = rng.randrange(1, len(data))
        out.append(data[:cut])  # truncated
        flipped = bytearray(data)
        for _ in range(max(1, len(data) // 200)):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        out.append(bytes(flipped))  # bytes flipped
    return out


@pytest.mark.parametrize(
    ("builder", "media_type"),
    [
        (make.report_pdf, "application/pdf"),
        (make.report_docx, DOCX),
        (make.report_xlsx, XLSX),
        (make.report_pptx, PPTX),
    ],
)
def test_mutated_and_truncated_copies_never_crash_or_hang(
    worker: ExtractionWorker, builder, media_type: str
) -> None:
    rng = random.Random(20261130)
    limits = ExtractionLimits(timeout_seconds=30)
    for mutated in _mutations(builder(), rng, 8):
        result = worker(mutated, media_type, "mutated", limits)
        assert isinstance(result, ExtractedDocument | ExtractionFailure)
        if isinstance(result, ExtractionFailure):
            assert result.reason in set(FailureReason)
