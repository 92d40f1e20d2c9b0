"""Media type from content (libmagic via python-magic), reconciled with the
extension for text formats that content alone cannot tell apart (Markdown is
plain text to libmagic)."""

from __future__ import annotations

import magic

_TEXT_BY_EXTENSION = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".csv": "text/csv",
    ".html": "text/html",
    ".htm": "text/html",
}


def sniff_media_type(data: bytes, filename: str) -> str:
    sniffed = magic.from_buffer(data[:65536], mime=True) if data else "application/x-empty"
    extension = ("." + filename.rsplit(".", 1)[-1].lower()) if "." in filename else ""
    by_extension = _TEXT_BY_EXTENSION.get(extension)
    if by_extension and (sniffed.startswith("text/") or sniffed == "application/x-empty"):
        return by_extension
    return sniffed
