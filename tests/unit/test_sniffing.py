"""Content decides a file's type. The extension may only name which text type
plain text is (Markdown, CSV, HTML are text/plain to libmagic); it never turns
a ZIP, random bytes or an empty file into a PDF, an Office document or an image."""

from __future__ import annotations

import io
import os
import zipfile

import pytest

from groundwork.upload_policy import check_content
from resources.inspection.sniffing import sniff_media_type

BINARY_TYPES = {
    "application/pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}


def _plain_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes/readme.txt", "not an office document")
    return buffer.getvalue()


RANDOM = bytes((n * 97 + 13) % 256 for n in range(4096)) + os.urandom(4096)


@pytest.mark.parametrize("name", ["report.pdf", "memo.docx", "sheet.xlsx", "deck.pptx", "a.png"])
@pytest.mark.parametrize("data", [_plain_zip(), RANDOM], ids=["zip", "random"])
def test_generic_content_is_never_named_a_binary_type_by_its_extension(
    data: bytes, name: str
) -> None:
    sniffed = sniff_media_type(data, name)
    assert sniffed not in BINARY_TYPES and not sniffed.startswith("image/")
    refused = check_content(name, sniffed)
    assert refused is not None and refused.reason == "type-mismatch"
    assert ".pdf" in refused.message and ".md" in refused.message  # what is accepted


@pytest.mark.parametrize("name", ["report.pdf", "memo.docx", "notes.txt", "readme.md"])
def test_an_empty_file_has_a_reason_of_its_own(name: str) -> None:
    sniffed = sniff_media_type(b"", name)
    assert sniffed == "application/x-empty"
    refused = check_content(name, sniffed)
    assert refused is not None and refused.reason == "empty-file"
    assert "0 bytes" in refused.message and ".pdf" in refused.message


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("notes.md", "text/markdown"),
        ("table.csv", "text/csv"),
        ("notes.txt", "text/plain"),
        ("page.html", "text/html"),
    ],
)
def test_text_is_still_named_by_its_extension(name: str, expected: str) -> None:
    data = b"alpha,beta\n1,2\n" if name.endswith(".csv") else b"Plain words, nothing more.\n"
    assert sniff_media_type(data, name) == expected
    assert check_content(name, expected) is None


def test_an_empty_file_reaching_extraction_fails_as_empty() -> None:
    """The inbox registers what it finds; an empty file fails with its own reason."""
    from groundwork.documents import ExtractionFailure, FailureReason
    from groundwork.extract import extract

    result = extract(b"", sniff_media_type(b"", "notes.txt"), "notes.txt")
    assert isinstance(result, ExtractionFailure) and result.reason == FailureReason.EMPTY
    assert "empty" in result.guidance
