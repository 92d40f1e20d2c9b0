"""PDF composition with pypdf: merge, split by page ranges, text watermark,
and page composition (reorder, insert another PDF's pages, rotate).
Each returns new bytes; an original is never modified."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

from fpdf import FPDF
from pypdf import PageObject, PdfReader, PdfWriter

from groundwork.errors import InvalidRequest
from groundwork.render.pdf import DEFAULT_FONT_DIR, FIXED_CREATION_DATE

MAX_INPUTS = 50
MAX_PAGES = 5_000
ROTATIONS = (90, 180, 270)
_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def _write(writer: PdfWriter) -> bytes:
    writer.add_metadata({"/Producer": "Groundwork", "/CreationDate": "D:20000101000000Z"})
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def merge(pdfs: Sequence[bytes]) -> bytes:
    if not 2 <= len(pdfs) <= MAX_INPUTS:
        raise InvalidRequest(f"merge takes 2 to {MAX_INPUTS} PDFs")
    writer = PdfWriter()
    pages = 0
    for data in pdfs:
        reader = PdfReader(io.BytesIO(data))
        pages += len(reader.pages)
        if pages > MAX_PAGES:
            raise InvalidRequest(f"the merged PDF would exceed {MAX_PAGES} pages")
        writer.append(reader)
    return _write(writer)


def parse_ranges(spec: str, page_count: int) -> list[tuple[int, int]]:
    """ "1-3,5" -> [(1, 3), (5, 5)]; 1-based, inclusive, checked against the page count."""
    ranges: list[tuple[int, int]] = []
    for part in spec.split(","):
        match = _RANGE.match(part)
        if not match:
            raise InvalidRequest(f"{part!r} is not a page range; write ranges like 1-3,5")
        start = int(match.group(1))
        end = int(match.group(2) or start)
        if not 1 <= start <= end <= page_count:
            raise InvalidRequest(f"pages {start}-{end} are outside 1-{page_count}")
        ranges.append((start, end))
    if not ranges or len(ranges) > MAX_INPUTS:
        raise InvalidRequest(f"give 1 to {MAX_INPUTS} page ranges")
    return ranges


def split(pdf: bytes, spec: str) -> list[bytes]:
    """One new PDF per range."""
    reader = PdfReader(io.BytesIO(pdf))
    parts = []
    for start, end in parse_ranges(spec, len(reader.pages)):
        writer = PdfWriter()
        for index in range(start - 1, end):
            writer.add_page(reader.pages[index])
        parts.append(_write(writer))
    return parts


def _stamp(text: str, width: float, height: float) -> bytes:
    stamp = FPDF(unit="pt", format=(width, height))
    stamp.set_creation_date(FIXED_CREATION_DATE)
    stamp.add_font("DejaVu", "", str(DEFAULT_FONT_DIR / "DejaVuSans.ttf"))
    stamp.add_page()
    stamp.set_font("DejaVu", size=max(min(width, height) / 12, 10))
    stamp.set_text_color(200, 60, 60)
    with stamp.local_context(fill_opacity=0.3):
        with stamp.rotation(45, x=width / 2, y=height / 2):
            text_width = stamp.get_string_width(text)
            stamp.text(width / 2 - text_width / 2, height / 2, text)
    return bytes(stamp.output())


def watermark(pdf: bytes, text: str) -> bytes:
    if not text.strip() or len(text) > 200:
        raise InvalidRequest("a watermark is 1 to 200 characters of text")
    writer = PdfWriter(clone_from=io.BytesIO(pdf))  # a copy: the original is never touched
    stamps: dict[tuple[float, float], PageObject] = {}
    for page in writer.pages:
        size = (float(page.mediabox.width), float(page.mediabox.height))
        if size not in stamps:
            stamps[size] = PdfReader(io.BytesIO(_stamp(text, *size))).pages[0]
        page.merge_page(stamps[size])
    return _write(writer)


def _reader(pdf: bytes) -> PdfReader:
    reader = PdfReader(io.BytesIO(pdf))
    if len(reader.pages) > MAX_PAGES:
        raise InvalidRequest(f"the PDF has more than {MAX_PAGES} pages")
    return reader


def reorder(pdf: bytes, order: Sequence[int]) -> bytes:
    """The pages in `order` (1-based): every page exactly once, so a reorder
    never silently drops or duplicates one (split and merge do that on purpose)."""
    reader = _reader(pdf)
    count = len(reader.pages)
    outside = [n for n in order if not 1 <= n <= count]
    if outside:
        raise InvalidRequest(f"page {outside[0]} is outside 1-{count}")
    if sorted(order) != list(range(1, count + 1)):
        raise InvalidRequest(
            f"give every page once: a permutation of 1-{count} ({len(order)} numbers given)"
        )
    writer = PdfWriter()
    for number in order:
        writer.add_page(reader.pages[number - 1])
    return _write(writer)


def insert_pages(pdf: bytes, inserted: bytes, after: int) -> bytes:
    """`inserted`'s pages placed after page `after` of `pdf` (0: before the first)."""
    host, guest = _reader(pdf), _reader(inserted)
    count = len(host.pages)
    if not 0 <= after <= count:
        raise InvalidRequest(f"after must be 0 to {count} (the page the insert follows)")
    if count + len(guest.pages) > MAX_PAGES:
        raise InvalidRequest(f"the PDF would exceed {MAX_PAGES} pages")
    writer = PdfWriter()
    for page in host.pages[:after]:
        writer.add_page(page)
    for page in guest.pages:
        writer.add_page(page)
    for page in host.pages[after:]:
        writer.add_page(page)
    return _write(writer)


def rotate(pdf: bytes, pages: str, degrees: int) -> bytes:
    """The pages in the ranges `pages` ("1-3,5") turned clockwise by `degrees`
    (added to any rotation they already have); the other pages as they were."""
    if degrees not in ROTATIONS:
        raise InvalidRequest("rotate by 90, 180 or 270 degrees (clockwise)")
    writer = PdfWriter(clone_from=_reader(pdf))
    for start, end in parse_ranges(pages, len(writer.pages)):
        for index in range(start - 1, end):
            page = writer.pages[index]
            page.rotation = (page.rotation + degrees) % 360  # a viewer reads 0-359
    return _write(writer)
