"""Figures inside documents (a DOCX's or a PPTX's pictures, the pictures on a
text PDF page) to the vision provider, when one is configured.

Why bounded: each figure is a model call. A deck of 300 slides with a logo on
each would be 300 calls describing the logo, so pictures smaller than an icon
are skipped and at most MAX_FIGURES per document are described (a warning
says so). Each description is labelled as a model's, never as text of the file
(`groundwork.extract.image.describe_image`)."""

from __future__ import annotations

import io
import warnings
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image

from groundwork.documents import Block, Location
from groundwork.extract.base import ExtractionContext
from groundwork.extract.image import MAX_PIXELS, describe_image

MAX_FIGURES = 20
#: below this on either side a picture is an icon, a bullet or a rule
MIN_FIGURE_PIXELS = 48
MAX_FIGURE_BYTES = 20 * 1024 * 1024


class FigureDescriber:
    """One per document: counts what it described, so the bound holds across
    the document's parts (body, text boxes, slides)."""

    def __init__(self, ctx: ExtractionContext, notes: list[str]) -> None:
        self._ctx = ctx
        self._notes = notes
        self.described = 0
        self.left_out = 0

    @property
    def active(self) -> bool:
        return self._ctx.vision is not None

    def describe(self, image: bytes, location: Location) -> Block | None:
        """A labelled description of the picture at `location`; None without a
        provider, for an icon or an unreadable picture, or past the bound."""
        if self._ctx.vision is None or not _is_figure(image):
            return None
        if self.described >= MAX_FIGURES:
            self.left_out += 1
            return None
        self.described += 1
        return describe_image(image, self._ctx, self._notes, location)

    def finish(self) -> None:
        if self.left_out:
            self._notes.append(
                f"only the first {MAX_FIGURES} figures were described by the vision model "
                f"({self.left_out} more were not)"
            )


def _is_figure(image: bytes) -> bool:
    if len(image) > MAX_FIGURE_BYTES:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(image)) as opened:
                width, height = opened.size
    except Exception:  # an EMF, a damaged or a hostile picture: not sent
        return False
    return min(width, height) >= MIN_FIGURE_PIXELS and width * height <= MAX_PIXELS


def pdf_page_figures(page: Any, number: int, figures: FigureDescriber) -> list[Block]:
    """The pictures drawn on a PDF page that has a text layer (an image-only
    page is rendered whole instead), each described and located on the page."""
    if not figures.active:
        return []
    found: list[Block] = []
    for image in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2):
        try:
            width, height = image.get_px_size()
            if min(width, height) < MIN_FIGURE_PIXELS or width * height > MAX_PIXELS:
                continue
            buffer = io.BytesIO()
            image.get_bitmap(render=False).to_pil().save(buffer, format="PNG")
        except (pdfium.PdfiumError, OSError, ValueError):
            continue  # a picture pdfium cannot decode is not sent
        where = Location(page=number, part=f"figure {figures.described + 1}")
        described = figures.describe(buffer.getvalue(), where)
        if described is not None:
            found.append(described)
    return found
