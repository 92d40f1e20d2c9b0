"""PDF flate bombs: a few hundred KB of compressed zeros that inflate to
hundreds of MB or GB inside the parser. They fail as `too-large` before any
parser inflates them, in bounded memory; a worker that still dies at its
memory ceiling is reported `out-of-memory`, not `malformed`."""

from __future__ import annotations

import zlib

import pytest

from groundwork.documents import (
    ExtractedDocument,
    ExtractionFailure,
    ExtractionLimits,
    FailureReason,
)
from groundwork.extract import extract
from resources.engines.extraction_worker import ExtractionWorker

MB = 1024 * 1024
WORKER_CEILING = 1024 * MB
UNBOUNDED = ExtractionLimits(max_inflated_bytes=1 << 40, max_stream_inflated_bytes=1 << 40)


def _deflated(head: bytes, zeros: int) -> bytes:
    compressor = zlib.compressobj(9)
    parts = [compressor.compress(head)]
    block = bytes(4 * MB)
    while zeros > 0:
        parts.append(compressor.compress(block[: min(zeros, len(block))]))
        zeros -= len(block)
    parts.append(compressor.flush())
    return b"".join(parts)


def bomb_pdf(pages: int, inflated_per_page: int) -> bytes:
    """A valid PDF whose every page's content stream is a real text operator
    followed by zeros (whitespace to a PDF parser) up to `inflated_per_page`."""
    head = b"BT /F1 12 Tf 72 720 Td (Hello bomb) Tj ET\n"
    stream = _deflated(head, inflated_per_page - len(head))
    kids = " ".join(f"{3 + 2 * n} 0 R" for n in range(pages)).encode()
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
    ]
    font = 3 + 2 * pages
    for n in range(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (4 + 2 * n, font)
        )
        objects.append(
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream)
            + stream
            + b"\nendstream"
        )
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


@pytest.fixture(scope="module")
def gigabyte_bomb() -> bytes:
    """Inflates past the worker's ceiling (about 1 MB on disk)."""
    return bomb_pdf(1, WORKER_CEILING + 100 * MB)


def test_an_ordinary_pdf_with_compressed_content_still_extracts() -> None:
    result = extract(bomb_pdf(2, 64 * 1024), "application/pdf", "fine.pdf")
    assert isinstance(result, ExtractedDocument)
    assert "Hello bomb" in " ".join(b.text for b in result.blocks)


def test_one_page_inflating_past_the_page_content_ceiling_is_too_large() -> None:
    data = bomb_pdf(1, 300 * MB)
    assert len(data) < 1 * MB
    limits = ExtractionLimits(max_stream_inflated_bytes=64 * MB)
    result = extract(data, "application/pdf", "bomb.pdf", limits)
    assert isinstance(result, ExtractionFailure) and result.reason == FailureReason.TOO_LARGE
    assert "content stream" in result.detail


def test_pages_inflating_past_the_document_ceiling_together_are_too_large() -> None:
    data = bomb_pdf(5, 40 * MB)  # each page under the page ceiling, 200 MB together
    limits = ExtractionLimits(max_inflated_bytes=128 * MB, max_stream_inflated_bytes=64 * MB)
    result = extract(data, "application/pdf", "bomb.pdf", limits)
    assert isinstance(result, ExtractionFailure) and result.reason == FailureReason.TOO_LARGE
    assert "inflate" in result.detail


def test_a_bomb_bigger_than_the_worker_fails_too_large_in_bounded_memory(
    gigabyte_bomb: bytes,
) -> None:
    """With the default ceilings the worker never inflates it: it answers
    instead of dying at its 1 GB address-space ceiling."""
    with ExtractionWorker(memory_limit=WORKER_CEILING, with_ocr=False) as worker:
        result = worker(gigabyte_bomb, "application/pdf", "bomb.pdf")
    assert isinstance(result, ExtractionFailure), result
    assert result.reason == FailureReason.TOO_LARGE, result.detail


def test_a_worker_killed_at_its_memory_ceiling_is_out_of_memory_not_malformed(
    gigabyte_bomb: bytes,
) -> None:
    """The ceilings lifted, pdfium inflates the stream, its allocation fails
    under RLIMIT_AS and it aborts the process."""
    with ExtractionWorker(memory_limit=WORKER_CEILING, with_ocr=False) as worker:
        result = worker(gigabyte_bomb, "application/pdf", "bomb.pdf", UNBOUNDED)
        assert isinstance(result, ExtractionFailure), result
        assert result.reason == FailureReason.OUT_OF_MEMORY, result.detail
        assert "memory ceiling" in result.detail and result.guidance
        # the next document gets a fresh child
        after = worker(bomb_pdf(1, 64 * 1024), "application/pdf", "fine.pdf")
    assert isinstance(after, ExtractedDocument)
