"""Media type from content (libmagic via python-magic), reconciled with the
extension only where content cannot decide between text types: Markdown, CSV
and fragment HTML are plain text to libmagic. An OOXML package whose first
entries are not its main part reads as a bare ZIP (its entries then decide).

The extension never names a binary type: a ZIP, random bytes or an empty file
called report.pdf stays what its content is (application/zip,
application/octet-stream, application/x-empty), so the upload policy refuses it
with what is accepted instead of handing it to the PDF or Office parser, and an
empty file is application/x-empty whatever its name (its own refusal)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import magic

_TEXT_BY_EXTENSION = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".csv": "text/csv",
    ".tsv": "text/csv",
    ".html": "text/html",
    ".htm": "text/html",
}

_OOXML_BY_FOLDER = {
    "word/": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xl/": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "ppt/": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}

EMPTY = "application/x-empty"

SNIFF_BYTES = 64 * 1024


def _ooxml_from_entries(package: BinaryIO | Path) -> str | None:
    try:
        with zipfile.ZipFile(package) as archive:
            names = archive.namelist()[:5000]
    except (zipfile.BadZipFile, ValueError, OSError):
        return None
    for folder, media_type in _OOXML_BY_FOLDER.items():
        if any(name.startswith(folder) for name in names):
            if folder == "xl/" and any(name.endswith("vbaProject.bin") for name in names):
                return "application/vnd.ms-excel.sheet.macroEnabled.12"
            return media_type
    return None


def sniff_media_type(data: bytes, filename: str) -> str:
    return _sniff(data[:SNIFF_BYTES], filename, lambda: io.BytesIO(data))


def sniff_path(path: Path | BinaryIO, filename: str) -> str:
    """The same answer as `sniff_media_type` for a file on disk (or a seekable
    reader: a staged upload in a bucket), reading only its head (and a ZIP's
    central directory), never the whole file."""
    if not isinstance(path, Path):
        path.seek(0)
        head = path.read(SNIFF_BYTES)
        path.seek(0)
        return _sniff(head, filename, lambda: path)
    with path.open("rb") as handle:
        head = handle.read(SNIFF_BYTES)
    return _sniff(head, filename, lambda: path)


def _sniff(head: bytes, filename: str, package: Callable[[], BinaryIO | Path]) -> str:
    if not head:
        return EMPTY
    sniffed = magic.from_buffer(head, mime=True)
    extension = ("." + filename.rsplit(".", 1)[-1].lower()) if "." in filename else ""
    if sniffed in ("application/zip", "application/octet-stream") and head[:2] == b"PK":
        # only the package's own entries make a ZIP an Office document
        sniffed = _ooxml_from_entries(package()) or sniffed
    by_extension = _TEXT_BY_EXTENSION.get(extension)
    if by_extension and sniffed.startswith("text/"):
        if sniffed == "text/html" and by_extension == "text/plain":
            return sniffed
        return by_extension
    if sniffed == "text/xml" and by_extension == "text/html":
        return "text/html"
    return sniffed


class LibmagicInspector:
    """The FileInspector every deployment has: libmagic's answer, reconciled
    with the extension for text types only (the rules above)."""

    def media_type(self, data: bytes, filename: str) -> str:
        return sniff_media_type(data, filename)

    def media_type_of_path(self, path: Path | BinaryIO, filename: str) -> str:
        return sniff_path(path, filename)
