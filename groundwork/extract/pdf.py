"""PDF: the text layer through pypdfium2 (measured here at ~500 pages/s against
pypdf's ~43 and pdfplumber's ~13), structure inferred from it, tables only
where the evidence is strong, OCR only for pages without a usable text layer.

- Headings: lines set larger than the body size (the most common size, by
  characters), or bold at body size and short; sizes come from loose character
  boxes, which scale with the font size (pdfium's own font size is often 1.0
  when the text matrix carries the scale).
- Tables, cheap signals first (a wrong table is worse than none; text inside
  an accepted table is taken out of the paragraph flow):
  - ruled: only on pages whose drawings cross like a grid (`_looks_ruled`),
    pdfplumber's lattice geometry over edges read from pdfium's paths
    (ruled_tables.py; pdfminer's page parse was ~95% of PDF time);
  - borderless: words regrouped into the page's lines, and a table only where
    whitespace runs down several lines at the same places and the cells carry
    evidence (text_tables.py); a page with fewer than three lines holding a
    column gap stops there. Measured against camelot, img2table, tabula and
    pdfplumber's text strategy in bench/table_candidates.py.
  - ruled only between the cells (no outer frame) or with column rules and
    no row rules: the frame is completed and the body cut at the lines that
    start a record (ruled_tables.py).
- Reading order is the content stream's, except that a table goes where the
  page has it (before the first line under its top once the text above it
  has been read), and the page's furniture is left out: running headers and
  footers recurring in the margins of other pages, and bare page numbers.
- The page text is read so that its positions are pdfium's character
  indices (pdf_words.indexed_text): pdfium's own text drops control-character
  glyphs and joins surrogate pairs while its indices count them, which had
  shifted every box after one.
- Type0/CID fonts without a usable ToUnicode map decode to private-use or
  replacement characters: such pages are flagged and, with OCR available,
  recognised from the image instead.
- Flate bombs: pdfium inflates a stream whole, so a few MB of
  compressed zeros become gigabytes inside the parser (pdfium aborts the
  process when its allocation fails). Before pdfium sees the bytes,
  every Flate stream is inflated once in 1 MB pieces that are counted and
  dropped: over the document's ceiling, or one non-image stream (a page's
  content) over its own, the PDF is refused as too large in bounded memory.
"""

from __future__ import annotations

import io
import re
import statistics
import zlib
from collections import Counter
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from groundwork.documents import Block, BlockKind, FailureReason, Location, Table
from groundwork.extract.base import Extracted, ExtractionContext, Refused
from groundwork.extract.figures import FigureDescriber, pdf_page_figures
from groundwork.extract.image import describe_image
from groundwork.extract.ocr import ocr_blocks
from groundwork.extract.pdf_words import (
    as_text,
    indexed_text,
    page_words,
    without_controls,
    word_lines,
)
from groundwork.extract.ruled_tables import find_ruled_tables
from groundwork.extract.text_tables import find_text_tables

MIN_TEXT_CHARS = 16  # fewer alphanumerics than this on a page with images: a scan
GARBAGE_RATIO = 0.3
#: characters outside tables below which the tables' text sets the body size too
MIN_PROSE_CHARS = 200
OCR_DPI = 300
#: image-only pages a vision model describes per document (each is a model call)
MAX_DESCRIBED_PAGES = 20
_BULLET = re.compile(r"^\s*(?:[•▪◦●○■□◆‣∙·\-–*]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)])\s+")
# an ordinal ("23.", "b)") is part of the item, as a DOCX list label is:
# "question 23" is found by it; a bullet glyph is not
_ORDINAL = re.compile(r"^\s*\(?(?:\d{1,3}|[a-zA-Z])[.)]")


@dataclass(slots=True)
class _Line:
    text: str
    size: float
    bold: bool
    x0: float
    y0: float
    x1: float
    y1: float


# pdfium writes the lam-alef ligature (one glyph) as alef then lam; after the
# article's alef that is never Arabic or Persian ("األ" for "الأ", "کاالی" for
# "کالای"), so the pair is put back in logical order. Same length: character
# indices into the text page stay valid.
_LAM_ALEF = re.compile("(?<=\u0627)([\u0622\u0623\u0625\u0627])\u0644")


def _lam_first(match: re.Match[str]) -> str:
    return "\u0644" + match.group(1)


def _is_garbage(text: str) -> bool:
    visible = [c for c in text if not c.isspace()]
    if not visible:
        return False
    bad = sum(1 for c in visible if c == "\ufffd" or "\ue000" <= c <= "\uf8ff" or (ord(c) < 32))
    return bad / len(visible) > GARBAGE_RATIO


def _lines(textpage: pdfium.PdfTextPage, text: str) -> list[_Line]:
    out: list[_Line] = []
    offset = 0
    for raw_line in text.split("\r\n"):
        start, end = offset, offset + len(raw_line)
        offset = end + 2
        stripped = raw_line.strip()
        if not stripped:
            continue
        first = start + (len(raw_line) - len(raw_line.lstrip()))
        last = start + len(raw_line.rstrip()) - 1
        probes = sorted({first, (first + last) // 2, last})
        heights: list[float] = []
        x0 = y0 = float("inf")
        x1 = y1 = float("-inf")
        for index in probes:
            left, bottom, right, top = textpage.get_charbox(index, loose=True)
            heights.append(top - bottom)
            x0, y0, x1, y1 = min(x0, left), min(y0, bottom), max(x1, right), max(y1, top)
        weight = pdfium_c.FPDFText_GetFontWeight(textpage, first)
        text = as_text(stripped)
        out.append(_Line(text, round(statistics.median(heights), 1), weight >= 600, x0, y0, x1, y1))
    return out


def _looks_ruled(page: pdfium.PdfPage) -> bool:
    """Cheap evidence of a ruled grid (object bounds only) before reading every
    path segment for the lattice: some column span crossed by at
    least three horizontal edges at different heights, and at least two vertical
    edges standing within that span. Rectangles contribute their four sides;
    decorative boxes, underlines and rounded frames do not make a grid."""
    horizontal: dict[tuple[int, int], set[int]] = {}
    vertical: list[tuple[float, float, float]] = []
    for count, obj in enumerate(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_PATH], max_depth=2)):
        if count > 5000:
            break
        left, bottom, right, top = obj.get_bounds()
        width, height = right - left, top - bottom
        edges_h: list[float] = []
        if height < 2.5 and width > 10:
            edges_h = [bottom]
        elif width < 2.5 and height > 10:
            vertical.append((left, bottom, top))
        elif width > 8 and height > 8:
            edges_h = [bottom, top]
            vertical.extend([(left, bottom, top), (right, bottom, top)])
        for y in edges_h:
            horizontal.setdefault((round(left / 3), round(right / 3)), set()).add(round(y))
    for (left3, right3), ys in horizontal.items():
        if len(ys) < 3:
            continue
        low, high = min(ys), max(ys)
        xs = {
            round(x)
            for x, bottom, top in vertical
            if left3 * 3 - 3 <= x <= right3 * 3 + 3 and top > low and bottom < high
        }
        if len(xs) >= 2:
            return True
    return False


def _has_images(page: pdfium.PdfPage) -> bool:
    return any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2))


_STREAM_START = re.compile(rb"(?<!end)stream\r?\n")
_INFLATE_PIECE = 1024 * 1024
_FEED = 64 * 1024


def _inflated_size(stream: memoryview, limit: int) -> int:
    """Bytes a Flate stream inflates to, counted in pieces and never kept;
    stops just past `limit`. A stream that is not Flate (an image's DCT, a
    filter chain) stops at the first invalid byte and counts what it produced."""
    inflater = zlib.decompressobj()
    total = 0
    position = 0
    try:
        while position < len(stream) and not inflater.eof and total <= limit:
            total += len(inflater.decompress(stream[position : position + _FEED], _INFLATE_PIECE))
            position += _FEED
            # past the stream's end the leftover input stays in the tail: stop there
            while inflater.unconsumed_tail and not inflater.eof and total <= limit:
                total += len(inflater.decompress(inflater.unconsumed_tail, _INFLATE_PIECE))
    except zlib.error:
        pass
    return total


def check_inflation(data: bytes, max_total: int, max_stream: int) -> str | None:
    """Why the PDF's streams inflate beyond the ceilings, or None. Image streams
    count toward the document's total only (scans are legitimately large)."""
    view = memoryview(data)
    total = 0
    for match in _STREAM_START.finditer(data):
        dictionary = data[max(0, match.start() - 1024) : match.start()]
        dictionary = dictionary[dictionary.rfind(b"obj") + 1 :]
        is_image = b"/Image" in dictionary
        room = max_total - total
        size = _inflated_size(view[match.end() :], room if is_image else min(room, max_stream))
        if not is_image and size > max_stream:
            return f"a content stream inflates to over {max_stream} bytes"
        total += size
        if total > max_total:
            return f"the streams inflate to over {max_total} bytes"
    return None


def extract_pdf(data: bytes, ctx: ExtractionContext) -> Extracted:
    bomb = check_inflation(
        data, ctx.limits.max_inflated_bytes, ctx.limits.max_stream_inflated_bytes
    )
    if bomb is not None:
        raise Refused(FailureReason.TOO_LARGE, bomb)
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) == pdfium_c.FPDF_ERR_PASSWORD:
            raise Refused(FailureReason.ENCRYPTED, "the PDF needs a password to open") from exc
        raise Refused(FailureReason.MALFORMED, f"not a readable PDF: {exc}") from exc
    try:
        return _extract(document, ctx)
    finally:
        document.close()


def _page_tables(
    page: pdfium.PdfPage, textpage: pdfium.PdfTextPage, text: str
) -> list[tuple[Table, tuple[float, float, float, float]]]:
    """Ruled tables where the drawings look like a grid, then borderless ones
    among the words the ruled ones left."""
    words = page_words(textpage, text)
    found = find_ruled_tables(page, textpage, words) if _looks_ruled(page) else []
    found.extend(find_text_tables(word_lines(words), [box for _, box in found]))
    return found


def _extract(document: pdfium.PdfDocument, ctx: ExtractionContext) -> Extracted:
    pages = len(document)
    if pages > ctx.limits.max_pages:
        raise Refused(
            FailureReason.TOO_MANY_PAGES, f"{pages} pages; the limit is {ctx.limits.max_pages}"
        )
    warnings: list[str] = []
    per_page: list[list[_Line]] = []
    page_heights: list[float] = []
    per_page_tables: list[list[tuple[Table, tuple[float, float, float, float]]]] = []
    figures = FigureDescriber(ctx, warnings)
    per_page_figures: list[list[Block]] = []  # pictures on text pages, described
    needs_ocr: list[int] = []
    garbage_pages: list[int] = []
    for index in range(pages):
        page = document[index]
        textpage = page.get_textpage()
        raw_text = _LAM_ALEF.sub(_lam_first, indexed_text(textpage))
        page_text = without_controls(raw_text)
        lines = _lines(textpage, page_text)
        text = " ".join(line.text for line in lines)
        alnum = sum(1 for c in text if c.isalnum())
        garbage = _is_garbage(raw_text)
        if garbage:
            garbage_pages.append(index + 1)
        if (alnum < MIN_TEXT_CHARS and _has_images(page)) or garbage:
            needs_ocr.append(index)
            lines = [] if ctx.ocr is not None or not garbage else lines
        per_page.append(lines)
        page_heights.append(page.get_height())
        # tables while the page is open: only what they found is kept, not the words
        per_page_tables.append(_page_tables(page, textpage, page_text) if lines else [])
        per_page_figures.append(pdf_page_figures(page, index + 1, figures) if lines else [])
        textpage.close()
        page.close()
    if garbage_pages:
        warnings.append(
            f"the text layer of page(s) {_ranges(garbage_pages)} decodes to unreadable characters "
            "(fonts without a Unicode map)"
        )
    if needs_ocr and ctx.ocr is None and ctx.vision is None and not any(per_page):
        raise Refused(
            FailureReason.NO_TEXT_LAYER, f"{len(needs_ocr)} of {pages} pages have no text layer"
        )
    if needs_ocr and ctx.ocr is None and ctx.vision is None:
        warnings.append(
            f"page(s) {_ranges([i + 1 for i in needs_ocr])} have no text layer and were not OCRed"
        )

    # the body size is the prose's where there is a paragraph of it: a
    # report's table set smaller than its text would otherwise make every
    # line of that text a heading
    sizes: Counter[float] = Counter()
    in_tables: Counter[float] = Counter()
    for lines, page_tables in zip(per_page, per_page_tables, strict=True):
        for line in lines:
            inside = _table_containing(line, page_tables) is not None
            (in_tables if inside else sizes)[line.size] += len(line.text)
    if sum(sizes.values()) < MIN_PROSE_CHARS:
        sizes += in_tables
    body = sizes.most_common(1)[0][0] if sizes else 0.0
    per_page = _without_furniture(per_page, page_heights, per_page_tables, body)
    heading_sizes = sorted({s for s in sizes if body and s >= body * 1.15}, reverse=True)[:4]
    level_of = {size: i + 1 for i, size in enumerate(heading_sizes)}

    blocks: list[Block] = []
    title: str | None = None
    described = 0  # image-only pages described by a vision model (bounded)
    for index, lines in enumerate(per_page):
        number = index + 1
        if index in needs_ocr and (ctx.ocr is not None or ctx.vision is not None):
            page = document[index]
            image = page.render(scale=OCR_DPI / 72).to_pil()
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            page.close()
            if ctx.ocr is not None:
                blocks.extend(ocr_blocks(ctx.ocr.recognize(buffer.getvalue()), page=number))
            if ctx.vision is not None and described < MAX_DESCRIBED_PAGES:
                described += 1
                block = describe_image(buffer.getvalue(), ctx, warnings, Location(page=number))
                if block is not None:
                    blocks.append(block)
            continue
        page_blocks, page_title = _layout_page(
            lines, number, per_page_tables[index], level_of, len(heading_sizes), body
        )
        blocks.extend(page_blocks + per_page_figures[index])
        title = title or page_title
        if len(blocks) > ctx.limits.max_blocks:
            warnings.append(f"only the first {ctx.limits.max_blocks} blocks were kept")
            return Extracted(
                blocks=blocks[: ctx.limits.max_blocks],
                warnings=warnings,
                title=title,
                truncated=True,
            )
    if ctx.vision is not None and len(needs_ocr) > MAX_DESCRIBED_PAGES:
        warnings.append(
            f"only the first {MAX_DESCRIBED_PAGES} image-only pages were described by the "
            "vision model"
        )
    figures.finish()
    metadata_title = (document.get_metadata_value("Title") or "").strip()
    return Extracted(blocks=blocks, warnings=warnings, title=metadata_title or title)


#: the page's margins where running headers, footers and page numbers sit
FURNITURE_MARGIN = 0.07
# a well-formed roman numeral ("xiv"), not any word of its letters ("civil")
_ROMAN_NUMERAL = r"(?=[ivxlcdm])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})"
_ROMAN = re.compile(f"^{_ROMAN_NUMERAL}$", re.IGNORECASE)
_FOLIO = re.compile(
    rf"^(?:page\s+)?(?:\d{{1,4}}|{_ROMAN_NUMERAL})(?:\s*(?:of|/)\s*\d{{1,4}})?$"  # 7, iii, Page 7 of 9
    r"|^\d{1,3}[-–]\d{1,4}$"  # 7-45: chapter and page
    r"|^[-–]\s*\d{1,4}\s*[-–]$",  # - 7 -
    re.IGNORECASE,
)


def _furniture_key(text: str) -> str:
    """The text with its page numbers made alike ("© IBM 2014. iii" and
    "© IBM 2014. 1"; "Chapter 3 ... 27" and "Chapter 3 ... 29")."""
    words = text.lower().split()
    for end in (0, -1):
        if words and _ROMAN.match(words[end]):
            words[end] = "#"
    return re.sub(r"\d+", "#", " ".join(words))


def _without_furniture(
    per_page: list[list[_Line]],
    heights: list[float],
    tables: list[list[tuple[Table, tuple[float, float, float, float]]]],
    body: float,
) -> list[list[_Line]]:
    """The pages' lines without their furniture: a line in the top or bottom
    margin that is a bare page number, or whose text recurs in the margins
    of another page (page numbers aside, unless it is set larger than the
    body: "Part 1" and "Part 2" heading their pages are headings). Such lines
    are no part of the text, and left in they land inside the paragraph that
    runs across the page break. A heading or note seen once in a margin stays."""
    margins: list[list[int]] = []
    seen: Counter[str] = Counter()
    exact: Counter[str] = Counter()
    for lines, height, page_tables in zip(per_page, heights, tables, strict=True):
        band = FURNITURE_MARGIN * height
        inside = [
            i
            for i, line in enumerate(lines)
            if (line.y1 >= height - band or line.y0 <= band)
            and _table_containing(line, page_tables) is None
        ]
        margins.append(inside)
        seen.update({_furniture_key(lines[i].text) for i in inside})
        exact.update({lines[i].text for i in inside})

    def furniture(line: _Line) -> bool:
        if _FOLIO.match(line.text.strip()) or exact[line.text] >= 2:
            return True
        return seen[_furniture_key(line.text)] >= 2 and line.size < body * 1.15

    out: list[list[_Line]] = []
    for lines, inside in zip(per_page, margins, strict=True):
        drop = {i for i in inside if furniture(lines[i])}
        out.append([line for i, line in enumerate(lines) if i not in drop])
    return out


def _layout_page(
    lines: list[_Line],
    number: int,
    page_tables: list[tuple[Table, tuple[float, float, float, float]]],
    level_of: dict[float, int],
    heading_levels: int,
    body: float,
) -> tuple[list[Block], str | None]:
    """One page's lines into headings, paragraphs, list items and tables, in order."""
    blocks: list[Block] = []
    title: str | None = None
    placed: set[int] = set()
    paragraph: list[_Line] = []

    def flush() -> None:
        if paragraph:
            blocks.append(_paragraph_block(paragraph, number))
            paragraph.clear()

    def place(index: int) -> None:
        flush()
        placed.add(index)
        table, box = page_tables[index]
        blocks.append(
            Block(
                BlockKind.TABLE, table.to_markdown(), Location(page=number, bbox=box), table=table
            )
        )

    reached: set[int] = set()
    for line in lines:
        # a table goes where the page has it, however late the content stream
        # draws it: once the text above it (in its columns) has been read,
        # before the first line under its top. A footer drawn first in the
        # stream is under every table but comes before the text reaches any.
        for i, (_, (x0, _, x1, top)) in enumerate(page_tables):
            if i in placed or line.x0 >= x1 or line.x1 <= x0:
                continue
            if line.y0 > top:
                reached.add(i)
            elif i in reached and line.y1 < top:
                place(i)
        inside = _table_containing(line, page_tables)
        if inside is not None:
            if inside not in placed:
                place(inside)
            flush()
            continue
        level = level_of.get(line.size)
        short = len(line.text) <= 120 and not line.text.endswith((".", ",", ";"))
        if (
            level is None
            and line.bold
            and body
            and abs(line.size - body) < 0.5
            and len(line.text) <= 80
        ):
            level = heading_levels + 1 if short else None
        if level is not None and short and any(c.isalpha() for c in line.text):
            flush()
            box = (line.x0, line.y0, line.x1, line.y1)
            blocks.append(
                Block(BlockKind.HEADING, line.text, Location(page=number, bbox=box), level=level)
            )
            title = title or (line.text if level == 1 else None)
            continue
        if _BULLET.match(line.text):
            flush()
            paragraph.append(line)
            continue
        if paragraph:
            previous = paragraph[-1]
            gap = previous.y0 - line.y1
            # a line above the previous one in the same column starts anew (a
            # footer drawn first, then the page's text); one in the next
            # column may carry on the paragraph
            above = line.y0 > previous.y1 and line.x0 < previous.x1 and line.x1 > previous.x0
            if (
                gap > max(previous.y1 - previous.y0, 1.0) * 0.9
                or abs(previous.size - line.size) > 0.5
                or above
            ):
                flush()
        paragraph.append(line)
    flush()
    for i in range(len(page_tables)):
        if i not in placed:
            place(i)
    return blocks, title


def _table_containing(
    line: _Line, tables: list[tuple[Table, tuple[float, float, float, float]]]
) -> int | None:
    cx, cy = (line.x0 + line.x1) / 2, (line.y0 + line.y1) / 2
    for i, (_, (x0, y0, x1, y1)) in enumerate(tables):
        if x0 - 1 <= cx <= x1 + 1 and y0 - 1 <= cy <= y1 + 1:
            return i
    return None


def _paragraph_block(lines: list[_Line], page: int) -> Block:
    text = ""
    for line in lines:
        if text.endswith("-") and line.text[:1].islower():
            text = text[:-1] + line.text  # a word hyphenated across lines
        else:
            text = f"{text} {line.text}" if text else line.text
    bbox = (
        min(line.x0 for line in lines),
        min(line.y0 for line in lines),
        max(line.x1 for line in lines),
        max(line.y1 for line in lines),
    )
    match = _BULLET.match(text)
    if match:
        return Block(
            BlockKind.LIST_ITEM,
            text.strip() if _ORDINAL.match(text) else text[match.end() :].strip(),
            Location(page=page, bbox=bbox),
            level=1,
        )
    return Block(BlockKind.PARAGRAPH, text, Location(page=page, bbox=bbox))


def _ranges(numbers: list[int]) -> str:
    parts: list[str] = []
    start = prev = numbers[0]
    for n in numbers[1:]:
        if n == prev + 1:
            prev = n
            continue
        parts.append(f"{start}-{prev}" if start != prev else str(start))
        start = prev = n
    parts.append(f"{start}-{prev}" if start != prev else str(start))
    return ", ".join(parts)
