"""OcrProvider conformance: the contract in groundwork.ports.OcrProvider, run
against Tesseract and the in-memory fake the fast tests may use.

The contract: text in an image comes back as lines grouped in paragraphs,
each with a confidence in [0, 1] and a box inside the (upright) image; a page
turned by 90 degrees is recognised after correcting its orientation, which
the result reports; a blank image is an empty result, not an error."""

from __future__ import annotations

import io
import shutil

import pytest
from PIL import Image, PngImagePlugin

from groundwork.ports import OcrProvider, OcrResult
from testbed import documents as make
from tests.fakes import ScriptedOcr

LINES = ["QUARTERLY SALES REVIEW", "North region grew 12 percent"]


def _png(image: Image.Image, truth: list[str], rotate: int = 0) -> bytes:
    """The picture, with its ground truth in PNG text chunks (read only by the fake)."""
    info = PngImagePlugin.PngInfo()
    info.add_text("ocr-truth", "\n".join(truth))
    info.add_text("ocr-rotation", str(rotate))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", pnginfo=info)
    return buffer.getvalue()


class OcrProviderContract:
    @pytest.fixture
    def ocr(self) -> OcrProvider:
        raise NotImplementedError

    def test_is_the_port(self, ocr: OcrProvider) -> None:
        assert isinstance(ocr, OcrProvider)

    def test_text_comes_back_in_lines_with_confidence_and_boxes(self, ocr: OcrProvider) -> None:
        result = ocr.recognize(_png(make.text_image(LINES), LINES))
        words = " ".join(line.text for p in result.paragraphs for line in p).lower()
        assert "quarterly" in words and "review" in words and "north" in words
        assert 0.0 < result.mean_confidence <= 1.0 and result.rotation_degrees == 0
        for line in (line for p in result.paragraphs for line in p):
            assert 0.0 <= line.confidence <= 1.0
            x0, y0, x1, y1 = line.bbox
            assert 0 <= x0 < x1 <= result.width and 0 <= y0 < y1 <= result.height

    def test_a_turned_page_is_corrected_and_says_so(self, ocr: OcrProvider) -> None:
        # orientation detection needs a page's worth of text, as a real scan has
        turned = make.text_image(make.SCAN_LINES, rotate=90)
        result = ocr.recognize(_png(turned, list(make.SCAN_LINES), rotate=90))
        assert result.rotation_degrees in (90, 270)
        words = " ".join(line.text for p in result.paragraphs for line in p).lower()
        assert make.SCAN_LINES[0].split()[0].lower() in words
        assert result.width > result.height  # reported for the upright page

    def test_a_blank_image_is_an_empty_result(self, ocr: OcrProvider) -> None:
        result = ocr.recognize(_png(Image.new("RGB", (800, 600), "white"), []))
        assert isinstance(result, OcrResult)
        assert result.paragraphs == () and result.mean_confidence == 0.0


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract not installed")
class TestTesseractOcr(OcrProviderContract):
    @pytest.fixture
    def ocr(self) -> OcrProvider:
        from resources.models.ocr_tesseract import TesseractOcr

        return TesseractOcr()


class TestScriptedOcr(OcrProviderContract):
    @pytest.fixture
    def ocr(self) -> OcrProvider:
        return ScriptedOcr()
