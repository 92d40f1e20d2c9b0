"""convert_file: between the formats the platform reads and writes.

Documents go through the extraction block model and a renderer (DOCX -> PDF,
HTML -> DOCX, Markdown -> PDF, PDF -> Markdown, ...); tables go between CSV
and XLSX directly. Any other pair is refused with the pairs that work.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from openpyxl import Workbook, load_workbook

from groundwork.documents import ExtractedDocument
from groundwork.extract import extract
from groundwork.render import MEDIA_TYPES, ExportFormat
from groundwork.render.docx import render_docx
from groundwork.render.html import render_html
from groundwork.render.markdown import to_markdown
from groundwork.render.pdf import FIXED_CREATION_DATE, render_pdf

CSV = "text/csv"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
DOCUMENT_SOURCES = {
    "application/pdf",
    MEDIA_TYPES[ExportFormat.DOCX],
    "text/html",
    "text/markdown",
    "text/plain",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}
TARGETS = {
    "pdf": "application/pdf",
    "docx": MEDIA_TYPES[ExportFormat.DOCX],
    "html": "text/html",
    "markdown": "text/markdown",
    "csv": CSV,
    "xlsx": XLSX,
}
MAX_ROWS = 1_000_000


@dataclass(frozen=True, slots=True)
class Converted:
    data: bytes
    media_type: str
    extension: str
    unrenderable: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ConversionRefused:
    message: str


def supported_pairs() -> str:
    return "PDF/DOCX/PPTX/HTML/Markdown/text -> pdf, docx, html, markdown; CSV -> xlsx; XLSX -> csv"


def convert(
    data: bytes, media_type: str, filename: str, target: str
) -> Converted | ConversionRefused:
    if target not in TARGETS:
        return ConversionRefused(f"unknown target {target!r}; targets: {', '.join(TARGETS)}")
    if media_type == CSV and target == "xlsx":
        return Converted(_csv_to_xlsx(data), XLSX, ".xlsx")
    if media_type == XLSX and target == "csv":
        return Converted(_xlsx_to_csv(data), CSV, ".csv")
    if media_type in DOCUMENT_SOURCES and target in ("pdf", "docx", "html", "markdown"):
        if TARGETS[target] == media_type:
            return ConversionRefused(f"{filename} is already {target}")
        parsed = extract(data, media_type, filename)
        if not isinstance(parsed, ExtractedDocument):
            return ConversionRefused(
                f"{filename} could not be read: {parsed.reason.value}: {parsed.detail}"
            )
        blocks = list(parsed.blocks)
        if target == "pdf":
            pdf, missing = render_pdf(parsed.title, blocks)
            return Converted(pdf, TARGETS[target], ".pdf", missing)
        if target == "docx":
            return Converted(
                render_docx(parsed.title, blocks, FIXED_CREATION_DATE), TARGETS[target], ".docx"
            )
        if target == "html":
            return Converted(render_html(parsed.title, blocks), TARGETS[target], ".html")
        return Converted(to_markdown(blocks).encode(), TARGETS[target], ".md")
    return ConversionRefused(
        f"{media_type} -> {target} is not supported; supported: {supported_pairs()}"
    )


def _csv_to_xlsx(data: bytes) -> bytes:
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    text = data.decode("utf-8-sig", errors="replace")
    for n, row in enumerate(csv.reader(io.StringIO(text))):
        if n >= MAX_ROWS:
            break
        sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _xlsx_to_csv(data: bytes) -> bytes:
    """The first sheet, values as displayed-ish (cached values, not formulas)."""
    workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    sheet = workbook.worksheets[0]
    out = io.StringIO()
    writer = csv.writer(out)
    for n, row in enumerate(sheet.iter_rows(values_only=True)):
        if n >= MAX_ROWS:
            break
        writer.writerow(["" if v is None else v for v in row])
    return out.getvalue().encode()
