"""Image extraction with a vision model configured: its description joins the
OCR text as a block labelled as a model's description (never as text in the
file); a model that cannot answer leaves a warning, not a failed document."""

from __future__ import annotations

import io

from PIL import Image, PngImagePlugin

from groundwork.documents import ExtractedDocument, ExtractionFailure, FailureReason
from groundwork.errors import CapabilityUnavailable
from groundwork.extract import extract
from groundwork.extract.image import DESCRIPTION_LABEL
from groundwork.ports import ImageDescription
from testbed import documents as make
from tests.fakes import ScriptedOcr


class _Vision:
    def __init__(self, fails: bool = False) -> None:
        self.fails = fails

    def describe(self, image: bytes) -> ImageDescription:
        if self.fails:
            raise CapabilityUnavailable("the vision endpoint did not answer")
        return ImageDescription("A bar chart of revenue by quarter.", "llava-test")


def _png(truth: str = "Quarterly revenue") -> bytes:
    info = PngImagePlugin.PngInfo()
    info.add_text("ocr-truth", truth)
    out = io.BytesIO()
    Image.new("RGB", (400, 100), "white").save(out, "PNG", pnginfo=info)
    return out.getvalue()


def test_the_description_is_a_labelled_block_beside_the_ocr_text() -> None:
    result = extract(_png(), "image/png", "chart.png", ocr=ScriptedOcr(), vision=_Vision())
    assert isinstance(result, ExtractedDocument)
    texts = [b.text for b in result.blocks]
    assert texts[0] == "Quarterly revenue"
    label = DESCRIPTION_LABEL.format(model="llava-test")
    assert texts[1] == f"{label} A bar chart of revenue by quarter."
    assert result.blocks[1].location.page == 1 and result.blocks[1].confidence is None


def test_a_failing_model_leaves_a_warning_and_the_ocr_text() -> None:
    result = extract(
        _png(), "image/png", "chart.png", ocr=ScriptedOcr(), vision=_Vision(fails=True)
    )
    assert isinstance(result, ExtractedDocument)
    assert [b.text for b in result.blocks] == ["Quarterly revenue"]
    assert any("image description unavailable" in w for w in result.warnings)


def test_without_ocr_a_description_alone_makes_the_image_readable() -> None:
    described = extract(_png(), "image/png", "chart.png", vision=_Vision())
    assert isinstance(described, ExtractedDocument) and len(described.blocks) == 1
    neither = extract(_png(), "image/png", "chart.png")
    assert isinstance(neither, ExtractionFailure)
    assert neither.reason == FailureReason.NO_TEXT_LAYER


class _CountingVision(_Vision):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def describe(self, image: bytes) -> ImageDescription:
        self.calls += 1
        return super().describe(image)


def test_image_only_pdf_pages_are_described_and_text_pages_are_not() -> None:
    vision = _CountingVision()
    scan = extract(make.scanned_pdf(), "application/pdf", "scan.pdf", vision=vision)
    assert isinstance(scan, ExtractedDocument) and vision.calls == 1
    [block] = [b for b in scan.blocks if b.text.startswith("[Image description")]
    assert block.location.page == 1
    text = extract(make.report_pdf(), "application/pdf", "r.pdf", vision=vision)
    assert isinstance(text, ExtractedDocument) and vision.calls == 1
