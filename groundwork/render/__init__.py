"""Rendering the block model to files: HTML, PDF (fpdf2), DOCX (python-docx),
PPTX (python-pptx), XLSX (openpyxl) and Markdown, each behind the
ArtifactRenderer port (groundwork.render.renderers, which owns the format
names; ExportFormat below names the first four for older callers). Every renderer is deterministic for the same input, and every
rendered PDF and DOCX can be read back by the extraction parsers
(`groundwork.render.fidelity`), which is how fidelity is verified."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class ExportFormat(StrEnum):
    MARKDOWN = "markdown"
    HTML = "html"
    PDF = "pdf"
    DOCX = "docx"


MEDIA_TYPES: dict[ExportFormat, str] = {
    ExportFormat.MARKDOWN: "text/markdown",
    ExportFormat.HTML: "text/html",
    ExportFormat.PDF: "application/pdf",
    ExportFormat.DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
EXTENSIONS: dict[ExportFormat, str] = {
    ExportFormat.MARKDOWN: ".md",
    ExportFormat.HTML: ".html",
    ExportFormat.PDF: ".pdf",
    ExportFormat.DOCX: ".docx",
}


@dataclass(frozen=True, slots=True)
class RenderedFile:
    data: bytes
    format: str  # the adapter's format string
    #: characters the font could not draw, as U+XXXX; drawn as a visible marker, never dropped
    unrenderable: tuple[str, ...] = field(default=())
    media_type: str = "application/octet-stream"
