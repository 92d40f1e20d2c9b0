"""Blocks to PDF with fpdf2, deterministically.

- The same input gives the same bytes: the creation date is a fixed constant
  (unless the caller passes one) and fpdf2 derives the document /ID from the
  content and that date.
- An embedded Unicode TrueType font (DejaVu Sans from Debian) with its real
  metrics does the wrapping; words longer than a line are broken, not
  overflowed; tables are sized from their widest cells, with the header row
  repeated after a page break.
- A character the font cannot draw is reported (as U+XXXX) and drawn as a
  visible marker, never dropped and never shown as `?`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from fontTools.ttLib import TTFont
from fpdf import FPDF
from fpdf.enums import TableHeadingsDisplay, WrapMode

from groundwork.documents import Block, BlockKind
from groundwork.errors import CapabilityUnavailable

#: The creation date written into every PDF unless configured: determinism.
FIXED_CREATION_DATE = datetime(2000, 1, 1, tzinfo=UTC)
DEFAULT_FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
_HEADING_SIZES = {1: 18, 2: 15, 3: 13, 4: 12, 5: 11, 6: 11}
_BODY_SIZE = 10.5


class _Glyphs:
    """Which code points the font draws; everything else is replaced visibly."""

    def __init__(self, font_path: Path) -> None:
        self.codepoints = _codepoints(font_path)
        self.missing: list[str] = []

    def clean(self, text: str) -> str:
        out: list[str] = []
        for ch in text:
            if ch in "\n\t" or ord(ch) in self.codepoints:
                out.append(ch)
            else:
                label = f"U+{ord(ch):04X}"
                if label not in self.missing:
                    self.missing.append(label)
                out.append(f"[{label}]")
        return "".join(out)


@functools.lru_cache(maxsize=8)
def _codepoints(font_path: Path) -> frozenset[int]:
    """The font's character map, read once per process (not per render)."""
    with TTFont(str(font_path), lazy=True) as font:
        return frozenset(font.getBestCmap() or {})


def _fonts(font_dir: Path) -> tuple[Path, Path]:
    regular, bold = font_dir / "DejaVuSans.ttf", font_dir / "DejaVuSans-Bold.ttf"
    if not regular.exists() or not bold.exists():
        raise CapabilityUnavailable(
            f"PDF rendering needs DejaVu Sans in {font_dir}; install the Debian package "
            "fonts-dejavu-core (./run does)"
        )
    return regular, bold


def render_pdf(
    title: str,
    blocks: Sequence[Block],
    created: datetime | None = None,
    font_dir: Path = DEFAULT_FONT_DIR,
) -> tuple[bytes, tuple[str, ...]]:
    """(PDF bytes, unrenderable characters as U+XXXX)."""
    regular, bold = _fonts(font_dir)
    glyphs = _Glyphs(regular)
    pdf = FPDF(format="A4", unit="mm")
    pdf.set_creation_date(created or FIXED_CREATION_DATE)
    pdf.set_title(glyphs.clean(title))
    pdf.set_producer("Groundwork")
    pdf.set_creator("Groundwork")
    pdf.add_font("DejaVu", "", str(regular))
    pdf.add_font("DejaVu", "B", str(bold))
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.set_margins(18, 18, 18)
    pdf.add_page()
    pdf.set_font("DejaVu", size=_BODY_SIZE)
    width = pdf.epw
    for block in blocks:
        if block.kind == BlockKind.HEADING:
            size = _HEADING_SIZES.get(block.level or 1, 11)
            pdf.set_font("DejaVu", "B", size)
            pdf.ln(2)
            pdf.multi_cell(width, size * 0.5, glyphs.clean(block.text), wrapmode=WrapMode.WORD)
            pdf.ln(1)
            pdf.set_font("DejaVu", "", _BODY_SIZE)
        elif block.kind == BlockKind.TABLE and block.table is not None:
            _table(pdf, block, glyphs)
        elif block.kind == BlockKind.LIST_ITEM:
            indent = 5 * max((block.level or 1), 1)
            pdf.set_x(pdf.l_margin + indent)
            pdf.multi_cell(width - indent, 5.5, "• " + glyphs.clean(block.text))
        else:
            pdf.multi_cell(width, 5.5, glyphs.clean(block.text))
            pdf.ln(2)
    return bytes(pdf.output()), tuple(glyphs.missing)


def _table(pdf: FPDF, block: Block, glyphs: _Glyphs) -> None:
    assert block.table is not None
    rows = [[glyphs.clean(c) for c in row] for row in block.table.rows]
    columns = max((len(r) for r in rows), default=0)
    if not columns:
        return
    rows = [r + [""] * (columns - len(r)) for r in rows]
    pdf.set_font("DejaVu", "", 9)
    # widest cell per column (capped so one long cell cannot starve the others)
    widest = [
        min(max(pdf.get_string_width(r[c]) for r in rows) + 4, pdf.epw * 0.6)
        for c in range(columns)
    ]
    widest = [max(w, 12.0) for w in widest]
    scale = pdf.epw / sum(widest)
    col_widths = tuple(w * scale for w in widest) if scale < 1 else tuple(widest)
    pdf.ln(1)
    with pdf.table(
        col_widths=col_widths,
        width=sum(col_widths),
        align="LEFT",
        first_row_as_headings=block.table.header_rows > 0,
        repeat_headings=TableHeadingsDisplay.ON_TOP_OF_EVERY_PAGE,
        wrapmode=WrapMode.CHAR,
        line_height=4.8,
    ) as table:
        for row in rows:
            line = table.row()
            for cell in row:
                line.cell(cell)
    pdf.ln(3)
    pdf.set_font("DejaVu", "", _BODY_SIZE)
