"""Figures inside documents reach the vision provider when one is configured
(issue 35): a DOCX's and a PPTX's embedded pictures are described, labelled as
a model's description and located where the picture is; without a provider
nothing changes; icons are skipped and the count per document is bounded."""

from __future__ import annotations

import io

import docx
from PIL import Image
from pptx import Presentation
from pptx.util import Inches

from groundwork.documents import ExtractedDocument
from groundwork.extract import DOCX, PPTX, extract
from groundwork.extract.figures import MAX_FIGURES
from groundwork.extract.image import DESCRIPTION_LABEL
from groundwork.ports import ImageDescription


class RecordingVision:
    """The VisionProvider port answering from the image's size (no model)."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def describe(self, image: bytes) -> ImageDescription:
        with Image.open(io.BytesIO(image)) as opened:
            self.seen.append(opened.size)
        width, height = self.seen[-1]
        return ImageDescription(f"a bar chart, {width} by {height}", "fake-vision")


def _png(width: int, height: int) -> io.BytesIO:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (30, 90, 200)).save(buffer, format="PNG")
    buffer.seek(0)
    return buffer


def _docx(pictures: list[tuple[int, int]]) -> bytes:
    document = docx.Document()
    document.add_heading("Quarterly review", level=1)
    document.add_paragraph("Revenue by region is shown below.")
    for width, height in pictures:
        document.add_picture(_png(width, height))
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _pptx(pictures: list[tuple[int, int]]) -> bytes:
    deck = Presentation()
    for width, height in pictures:
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = "Revenue"
        slide.shapes.add_picture(_png(width, height), Inches(1), Inches(2))
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def _described(document: object) -> list[tuple[str, object]]:
    assert isinstance(document, ExtractedDocument)
    label = DESCRIPTION_LABEL.format(model="fake-vision")
    return [(b.text, b.location) for b in document.blocks if b.text.startswith(label)]


def test_a_docx_figure_is_described_where_it_sits() -> None:
    vision = RecordingVision()
    found = _described(extract(_docx([(320, 200)]), DOCX, "r.docx", vision=vision))
    assert vision.seen == [(320, 200)]
    [(text, location)] = found
    assert "a bar chart, 320 by 200" in text
    assert location.part == "figure 1" and location.element is not None  # type: ignore[attr-defined]


def test_a_pptx_figure_is_described_on_its_slide() -> None:
    vision = RecordingVision()
    found = _described(extract(_pptx([(300, 180), (400, 240)]), PPTX, "d.pptx", vision=vision))
    assert [loc.slide for _, loc in found] == [1, 2]  # type: ignore[attr-defined]
    assert [loc.part for _, loc in found] == ["figure 1", "figure 2"]  # type: ignore[attr-defined]
    assert "400 by 240" in found[1][0]


def test_without_a_provider_nothing_changes() -> None:
    plain = extract(_docx([(320, 200)]), DOCX, "r.docx")
    assert isinstance(plain, ExtractedDocument) and not _described(plain)
    assert not any("figure" in (b.location.part or "") for b in plain.blocks)


def test_icons_are_skipped_and_figures_are_bounded() -> None:
    vision = RecordingVision()
    extracted = extract(
        _pptx([(16, 16)] + [(200, 120)] * (MAX_FIGURES + 2)), PPTX, "d.pptx", vision=vision
    )
    assert len(vision.seen) == MAX_FIGURES and (16, 16) not in vision.seen
    assert isinstance(extracted, ExtractedDocument)
    assert any(f"first {MAX_FIGURES} figures" in w for w in extracted.warnings)


def _pdf_with_figure() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 12)
    pdf.multi_cell(0, 6, "Revenue by region is shown in the chart below. " * 4)
    pdf.image(_png(300, 160), x=20, y=60, w=120)
    pdf.add_page()
    pdf.multi_cell(0, 6, "A page of text only, with no picture on it at all. " * 4)
    return bytes(pdf.output())


def test_a_figure_on_a_text_pdf_page_is_described_on_its_page() -> None:
    vision = RecordingVision()
    document = extract(_pdf_with_figure(), "application/pdf", "r.pdf", vision=vision)
    found = _described(document)
    assert vision.seen == [(300, 160)]
    [(text, location)] = found
    assert location.page == 1 and location.part == "figure 1"  # type: ignore[attr-defined]
    assert isinstance(document, ExtractedDocument)
    assert "Revenue by region" in " ".join(b.text for b in document.blocks)
    assert not _described(extract(_pdf_with_figure(), "application/pdf", "r.pdf"))
