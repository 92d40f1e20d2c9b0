"""DocumentParser conformance: the contract in groundwork.extract.base.DocumentParser,
run against the per-format parsers the extraction stage uses (FormatParsers)
and the plain-text fake."""

from __future__ import annotations

import pytest

from groundwork.documents import (
    ExtractedDocument,
    ExtractionFailure,
    ExtractionLimits,
    FailureReason,
)
from groundwork.extract import FormatParsers
from groundwork.extract.base import DocumentParser
from tests.fakes_parsing import PlainTextParser

TEXT = "\n\n".join(f"Paragraph {n} says something about invoice INV-{n:04d}." for n in range(12))


class DocumentParserContract:
    @pytest.fixture
    def parser(self) -> DocumentParser:
        raise NotImplementedError

    @pytest.fixture
    def malformed(self) -> tuple[str, bytes]:
        """A type the parser reads, and bytes that are not a file of that type."""
        raise NotImplementedError

    def test_is_the_port(self, parser: DocumentParser) -> None:
        assert isinstance(parser, DocumentParser)
        assert "text/plain" in parser.media_types

    def test_reads_what_it_supports(self, parser: DocumentParser) -> None:
        result = parser.parse(TEXT.encode(), "text/plain", "notes.txt")
        assert isinstance(result, ExtractedDocument)
        assert "INV-0011" in " ".join(b.text for b in result.blocks)
        assert result == parser.parse(TEXT.encode(), "text/plain", "notes.txt")

    def test_empty_bytes_are_their_own_failure(self, parser: DocumentParser) -> None:
        result = parser.parse(b"", "text/plain", "notes.txt")
        assert isinstance(result, ExtractionFailure) and result.reason == FailureReason.EMPTY

    def test_too_large_is_refused_before_parsing(self, parser: DocumentParser) -> None:
        result = parser.parse(TEXT.encode(), "text/plain", "n.txt", ExtractionLimits(max_bytes=64))
        assert isinstance(result, ExtractionFailure) and result.reason == FailureReason.TOO_LARGE

    def test_an_unsupported_type_is_a_failure(self, parser: DocumentParser) -> None:
        assert "application/x-msdownload" not in parser.media_types
        result = parser.parse(b"MZ\x90\x00", "application/x-msdownload", "setup.exe")
        assert isinstance(result, ExtractionFailure)
        assert result.reason == FailureReason.UNSUPPORTED_TYPE

    def test_damaged_bytes_are_malformed_not_an_exception(
        self, parser: DocumentParser, malformed: tuple[str, bytes]
    ) -> None:
        media_type, data = malformed
        assert media_type in parser.media_types
        result = parser.parse(data, media_type, "damaged")
        assert isinstance(result, ExtractionFailure) and result.reason == FailureReason.MALFORMED

    def test_output_stays_within_the_limits(self, parser: DocumentParser) -> None:
        result = parser.parse(TEXT.encode(), "text/plain", "n.txt", ExtractionLimits(max_blocks=3))
        assert isinstance(result, ExtractedDocument)
        assert len(result.blocks) <= 3 and result.truncated and result.warnings


class TestFormatParsers(DocumentParserContract):
    @pytest.fixture
    def parser(self) -> DocumentParser:
        return FormatParsers()

    @pytest.fixture
    def malformed(self) -> tuple[str, bytes]:
        return "application/pdf", b"%PDF-1.7\n this is no PDF body at all \x00\x01"


class TestPlainTextParserFake(DocumentParserContract):
    @pytest.fixture
    def parser(self) -> DocumentParser:
        return PlainTextParser()

    @pytest.fixture
    def malformed(self) -> tuple[str, bytes]:
        return "text/plain", b"\xff\xfe\xfa not utf-8"
