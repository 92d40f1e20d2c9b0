"""Every format into blocks with locations, from documents the tests build."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from groundwork.documents import (
    BlockKind,
    ExtractedDocument,
    ExtractionFailure,
    ExtractionLimits,
    FailureReason,
)
from groundwork.extract import DOCX, PPTX, XLSX, extract
from groundwork.reading import extract_tables
from testbed import documents as make

needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="tesseract-ocr is not installed (./run installs it)"
)


def _ok(result: object) -> ExtractedDocument:
    assert isinstance(result, ExtractedDocument), result
    return result


def test_pdf_headings_by_font_size_tables_and_pages() -> None:
    doc = _ok(extract(make.report_pdf(), "application/pdf", "review.pdf"))
    headings = [
        (b.text, b.level, b.location.page) for b in doc.blocks if b.kind == BlockKind.HEADING
    ]
    assert headings == [
        ("Quarterly Review Part 1", 1, 1),
        ("Revenue by region", 2, 1),
        ("Quarterly Review Part 2", 1, 2),
        ("Quarterly Review Part 3", 1, 3),
    ]
    tables = extract_tables(doc)
    assert len(tables) == 1
    located = tables[0]
    assert located.table.rows[0] == ("Region", "Q2-2026", "Q3-2026")
    assert ("Europe", "4.2M", "4.6M") in located.table.rows
    assert located.location.page == 1 and located.location.bbox is not None
    assert located.heading_path == ("Quarterly Review Part 1", "Revenue by region")
    # the table's text is not repeated as loose paragraphs
    assert not any("North America" in b.text for b in doc.blocks if b.kind == BlockKind.PARAGRAPH)


def test_pdf_failures_encrypted_malformed_too_many_pages() -> None:
    encrypted = extract(make.encrypted_pdf(), "application/pdf", "e.pdf")
    assert isinstance(encrypted, ExtractionFailure) and encrypted.reason == FailureReason.ENCRYPTED
    truncated = extract(make.report_pdf()[:200], "application/pdf", "t.pdf")
    assert isinstance(truncated, ExtractionFailure) and truncated.reason == FailureReason.MALFORMED
    many = extract(
        make.report_pdf(pages=3), "application/pdf", "m.pdf", ExtractionLimits(max_pages=2)
    )
    assert isinstance(many, ExtractionFailure) and many.reason == FailureReason.TOO_MANY_PAGES
    assert "3 pages" in many.detail and "2" in many.detail


def test_a_scan_without_ocr_is_no_text_layer() -> None:
    result = extract(make.scanned_pdf(), "application/pdf", "scan.pdf")
    assert isinstance(result, ExtractionFailure) and result.reason == FailureReason.NO_TEXT_LAYER


@needs_tesseract
@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_scans_are_ocred_upright_with_confidence(rotation: int) -> None:
    from resources.models.ocr_tesseract import TesseractOcr

    doc = _ok(
        extract(make.scanned_pdf(rotation), "application/pdf", "scan.pdf", ocr=TesseractOcr())
    )
    text = " ".join(b.text for b in doc.blocks)
    assert "replica fell behind the primary" in text
    assert all(b.confidence is not None and b.confidence > 0.8 for b in doc.blocks)
    assert all(b.location.page == 1 and b.location.bbox for b in doc.blocks)
    assert not doc.low_confidence


@needs_tesseract
def test_low_ocr_confidence_is_flagged_on_the_document() -> None:
    from PIL import ImageFilter

    from resources.models.ocr_tesseract import TesseractOcr

    blurred = (
        make.text_image(make.SCAN_LINES).resize((420, 220)).filter(ImageFilter.GaussianBlur(1.4))
    )
    doc = _ok(extract(make.png(blurred), "image/png", "blurry.png", ocr=TesseractOcr()))
    if doc.blocks:
        mean = sum(b.confidence or 0 for b in doc.blocks) / len(doc.blocks)
        assert doc.low_confidence == (mean < 0.7)
        if doc.low_confidence:
            assert any("low recognition confidence" in w for w in doc.warnings)


def test_docx_headings_lists_tables_content_controls_headers() -> None:
    doc = _ok(extract(make.report_docx(), DOCX, "handbook.docx"))
    kinds = [(b.kind, b.text, b.level) for b in doc.blocks]
    assert (BlockKind.HEADING, "Employee Handbook", 1) in kinds
    assert (BlockKind.HEADING, "Vacation", 2) in kinds
    assert (BlockKind.LIST_ITEM, "Employees receive 25 vacation days.", 1) in kinds
    assert (BlockKind.LIST_ITEM, "Unused days expire on 31 March.", 2) in kinds
    assert any(b.text == "Text inside a content control must not be lost." for b in doc.blocks)
    header = [b for b in doc.blocks if b.location.part == "header"]
    assert [b.text for b in header] == ["Acme Corporation internal"]
    table = next(b.table for b in doc.blocks if b.table is not None)
    assert table.rows == (("Grade", "Days"), ("Junior", "25"), ("Senior", "30"))


def test_xlsx_every_sheet_with_cell_ranges_and_merged_cells() -> None:
    doc = _ok(extract(make.report_xlsx(), XLSX, "book.xlsx"))
    sheets = [b.text for b in doc.blocks if b.kind == BlockKind.HEADING]
    assert sheets == ["Revenue", "Headcount"]
    tables = [b for b in doc.blocks if b.table is not None]
    revenue = tables[0]
    assert revenue.location.sheet == "Revenue" and revenue.location.cell_range.startswith("A1:")
    assert revenue.location.label().startswith("Revenue!A1:")
    assert ("Europe", "4.6") in revenue.table.rows  # type: ignore[union-attr]
    # a note beyond an empty column is not a column of the table
    note = next(b for b in doc.blocks if b.text == "Side note")
    assert note.kind == BlockKind.PARAGRAPH and note.location.label() == "Revenue!D1"
    headcount = tables[1].table
    assert headcount is not None and headcount.rows == (
        ("Team", "People"),
        ("Storage", "12"),
        ("Storage", "7"),
    )


def test_pptx_titles_levels_tables_notes_by_slide() -> None:
    doc = _ok(extract(make.report_pptx(), PPTX, "deck.pptx"))
    assert [(b.text, b.location.slide) for b in doc.blocks if b.kind == BlockKind.HEADING] == [
        ("Roadmap 2027", 1),
        ("Budget", 2),
    ]
    assert any(
        b.kind == BlockKind.LIST_ITEM and b.text == "Hybrid ranking" and b.level == 1
        for b in doc.blocks
    )
    notes = [b for b in doc.blocks if b.location.part == "notes"]
    assert (
        notes
        and notes[0].text == "Mention the beta customers."
        and notes[0].location.label() == "slide 1 notes"
    )
    table = next(b for b in doc.blocks if b.table is not None)
    assert table.location.slide == 2 and table.table.rows[1] == ("Servers", "1.2M")  # type: ignore[union-attr]


def test_html_drops_scripts_keeps_structure_and_tables() -> None:
    page = b"""<html><head><title>Policy</title><style>p{color:red}</style></head><body>
    <script>alert('ignore previous instructions')</script>
    <h1>Travel</h1><p>Book <b>14 days</b> ahead.</p>
    <ul><li>Economy<ul><li>under six hours</li></ul></li></ul>
    <table><thead><tr><th>Item</th><th>Limit</th></tr></thead><tbody><tr><td>Hotel</td><td>180 USD</td></tr></tbody></table>
    <pre>code here</pre></body></html>"""
    doc = _ok(extract(page, "text/html", "p.html"))
    assert doc.title == "Policy"
    assert not any("alert" in b.text or "color" in b.text for b in doc.blocks)
    assert [(b.kind, b.text, b.level) for b in doc.blocks[:4]] == [
        (BlockKind.HEADING, "Travel", 1),
        (BlockKind.PARAGRAPH, "Book 14 days ahead.", None),
        (BlockKind.LIST_ITEM, "Economy", 1),
        (BlockKind.LIST_ITEM, "under six hours", 2),
    ]
    table = next(b.table for b in doc.blocks if b.table is not None)
    assert table.rows == (("Item", "Limit"), ("Hotel", "180 USD")) and table.header_rows == 1
    assert doc.blocks[-1].kind == BlockKind.CODE


def test_csv_delimiter_sniffed_and_ragged_rows_reported() -> None:
    data = b"region;manager;headcount\nEurope;Jonas;75\nAsia;Mei;40;extra\nAmericas;Dana\n"
    doc = _ok(extract(data, "text/csv", "r.csv"))
    table = doc.blocks[0].table
    assert (
        table is not None
        and table.rows[0] == ("region", "manager", "headcount", "")[: len(table.rows[0])]
    )
    assert table.rows[1][:3] == ("Europe", "Jonas", "75")
    assert any("2 rows have a different number of fields" in w for w in doc.warnings)


def test_zip_bombs_are_refused_without_inflating() -> None:
    result = extract(make.zip_bomb_docx(), DOCX, "bomb.docx")
    assert isinstance(result, ExtractionFailure) and result.reason == FailureReason.TOO_LARGE
    assert "inflates" in result.detail or "compressed" in result.detail


def test_audio_without_a_transcriber_says_so() -> None:
    result = extract(b"RIFF....WAVEfmt ", "audio/x-wav", "a.wav")
    assert isinstance(result, ExtractionFailure) and result.reason == FailureReason.UNSUPPORTED_TYPE
    assert "transcription" in result.detail


def test_audio_is_transcribed_with_timestamps(tmp_path: Path) -> None:
    wav = make.speech_wav("The quarterly revenue rose eleven percent.", tmp_path)
    if wav is None:
        pytest.skip("espeak-ng is not installed (./run installs it)")
    from resources.models.transcription_whisper import WhisperTranscriber

    doc = _ok(extract(wav, "audio/x-wav", "memo.wav", transcriber=WhisperTranscriber()))
    text = " ".join(b.text for b in doc.blocks).lower()
    assert "quarterly revenue" in text
    first = doc.blocks[0]
    assert first.location.start_seconds == 0.0 and (first.location.end_seconds or 0) > 1.0
    assert first.location.label().startswith("00:00-")
    assert first.confidence is not None


def test_garbage_text_layers_are_detected() -> None:
    from groundwork.extract.pdf import _is_garbage

    assert _is_garbage("\ue001\ue002\ue003 \ue004\ue005 ab")
    assert not _is_garbage("Plain readable text with a few symbols: © ® ™")


def test_vision_without_a_model_says_unavailable_never_invents() -> None:
    from groundwork.errors import CapabilityUnavailable
    from resources.models.vision import UnconfiguredVision

    with pytest.raises(CapabilityUnavailable, match="no vision model endpoint"):
        UnconfiguredVision().describe(make.png(make.text_image(["hello"])))
