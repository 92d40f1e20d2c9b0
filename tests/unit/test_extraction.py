from __future__ import annotations

from groundwork.documents import (
    BlockKind,
    ExtractedDocument,
    ExtractionFailure,
    ExtractionLimits,
    FailureReason,
)
from groundwork.extract import extract


def test_markdown_blocks_with_levels_lists_tables_and_lines() -> None:
    doc = extract(
        b"# Title\n\nIntro.\n\n## Part\n\n- one\n  - nested\n\n| A | B |\n|---|---|\n| 1 | 2 |\n",
        "text/markdown",
        "x.md",
    )
    assert isinstance(doc, ExtractedDocument)
    kinds = [(b.kind, b.level) for b in doc.blocks]
    assert kinds == [
        (BlockKind.HEADING, 1),
        (BlockKind.PARAGRAPH, None),
        (BlockKind.HEADING, 2),
        (BlockKind.LIST_ITEM, 1),
        (BlockKind.LIST_ITEM, 2),
        (BlockKind.TABLE, None),
    ]
    table = doc.blocks[-1].table
    assert table is not None and table.rows == (("A", "B"), ("1", "2")) and table.header_rows == 1
    assert doc.blocks[2].location.line_start == 5
    assert doc.title == "Title"


def test_plain_text_paragraphs_keep_line_ranges() -> None:
    doc = extract(b"first line\nstill first\n\nsecond\n", "text/plain", "notes.txt")
    assert isinstance(doc, ExtractedDocument)
    assert [(b.text, b.location.line_start, b.location.line_end) for b in doc.blocks] == [
        ("first line still first", 1, 2),
        ("second", 4, 4),
    ]
    assert doc.title == "notes"


def test_non_utf8_text_is_decoded() -> None:
    doc = extract("Café au lait, crème brûlée et façade.".encode("latin-1"), "text/plain", "a.txt")
    assert isinstance(doc, ExtractedDocument)
    assert "Café" in doc.blocks[0].text


def test_failures_are_values_from_the_closed_set() -> None:
    unsupported = extract(b"MZ\x90\x00", "application/x-msdownload", "a.exe")
    assert isinstance(unsupported, ExtractionFailure)
    assert unsupported.reason == FailureReason.UNSUPPORTED_TYPE
    assert unsupported.guidance
    stub = extract(b"%PDF-1.7", "application/pdf", "a.pdf")
    assert isinstance(stub, ExtractionFailure) and stub.reason == FailureReason.MALFORMED
    too_large = extract(b"x" * 100, "text/plain", "a.txt", ExtractionLimits(max_bytes=10))
    assert isinstance(too_large, ExtractionFailure) and too_large.reason == FailureReason.TOO_LARGE
    assert "10 bytes" in too_large.detail
    binary = extract(b"\x00\x01\x02\xff\xfe" * 100, "text/plain", "a.txt")
    assert isinstance(binary, ExtractionFailure) and binary.reason == FailureReason.MALFORMED


def test_text_and_block_bounds_truncate_and_say_so() -> None:
    doc = extract(b"para\n\n" * 1000, "text/plain", "a.txt", ExtractionLimits(max_blocks=10))
    assert isinstance(doc, ExtractedDocument)
    assert len(doc.blocks) == 10 and doc.truncated and doc.warnings
    doc = extract(b"word " * 1000, "text/plain", "a.txt", ExtractionLimits(max_text_bytes=100))
    assert isinstance(doc, ExtractedDocument)
    assert len(doc.blocks[0].text) <= 100 and doc.truncated


def test_document_round_trips_through_its_stored_form() -> None:
    doc = extract(b"# T\n\n| A |\n|---|\n| 1 |\n", "text/markdown", "t.md")
    assert isinstance(doc, ExtractedDocument)
    assert ExtractedDocument.from_dict(doc.to_dict()) == doc
