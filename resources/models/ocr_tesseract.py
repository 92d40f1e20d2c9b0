"""The OcrProvider port on Tesseract 5 (Debian `tesseract-ocr`, `-eng`, `-osd`)
through pytesseract.

Orientation first: OSD says how far the page is turned; it raises on
near-blank pages, which are then taken as upright. Words come back with
confidences (0-100, -1 for non-words) and boxes; they are grouped into lines
and paragraphs in Tesseract's reading order. OMP_THREAD_LIMIT=1 made
Tesseract ~3x faster on 2 cores here (its OpenMP threads fight each other).
"""

from __future__ import annotations

import io
import os
import shutil
from typing import Any

from PIL import Image, ImageOps

from groundwork.errors import CapabilityUnavailable
from groundwork.ports import OcrLine, OcrResult

MIN_OSD_CONFIDENCE = 2.0


def _pytesseract() -> Any:
    """pytesseract on the first page that needs OCR: importing it imports
    pandas when installed (~0.65 s), which a run of text PDFs never needs."""
    import pytesseract

    return pytesseract


class TesseractOcr:
    def __init__(self, language: str = "eng", timeout_seconds: float = 120.0) -> None:
        if shutil.which("tesseract") is None:
            raise CapabilityUnavailable(
                "the tesseract binary is not installed (Debian: tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd)"
            )
        self.language = language
        self.timeout_seconds = timeout_seconds
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")

    def recognize(self, image: bytes) -> OcrResult:
        with Image.open(io.BytesIO(image)) as opened:
            picture = ImageOps.exif_transpose(opened).convert("RGB")
        rotation = self._orientation(picture)
        if rotation:
            # OSD's "Rotate" is clockwise; PIL rotates counter-clockwise.
            picture = picture.rotate(-rotation, expand=True)
        pytesseract = _pytesseract()
        data = pytesseract.image_to_data(
            picture,
            lang=self.language,
            config="--psm 3",
            output_type=pytesseract.Output.DICT,
            timeout=self.timeout_seconds,
        )
        lines: dict[tuple[int, int, int], list[int]] = {}
        for i, word in enumerate(data["text"]):
            confidence = float(data["conf"][i])
            if confidence < 0 or not str(word).strip():
                continue
            key = (data["block_num"][i], data["par_num"][i], data["line_num"][i])
            lines.setdefault(key, []).append(i)
        paragraphs: dict[tuple[int, int], list[OcrLine]] = {}
        confidences: list[float] = []
        for key, indices in lines.items():
            words = [str(data["text"][i]).strip() for i in indices]
            scores = [float(data["conf"][i]) / 100 for i in indices]
            confidences.extend(scores)
            x0 = min(data["left"][i] for i in indices)
            y0 = min(data["top"][i] for i in indices)
            x1 = max(data["left"][i] + data["width"][i] for i in indices)
            y1 = max(data["top"][i] + data["height"][i] for i in indices)
            paragraphs.setdefault(key[:2], []).append(
                OcrLine(" ".join(words), sum(scores) / len(scores), (x0, y0, x1, y1))
            )
        mean = sum(confidences) / len(confidences) if confidences else 0.0
        return OcrResult(
            paragraphs=tuple(tuple(p) for p in paragraphs.values()),
            mean_confidence=mean,
            rotation_degrees=rotation,
            width=picture.width,
            height=picture.height,
        )

    def _orientation(self, picture: Image.Image) -> int:
        pytesseract = _pytesseract()
        try:
            osd = pytesseract.image_to_osd(
                picture,
                config="--psm 0",
                output_type=pytesseract.Output.DICT,
                timeout=self.timeout_seconds,
            )
        except (pytesseract.TesseractError, RuntimeError):
            return 0  # OSD refuses near-blank pages ("Too few characters"): take them as upright
        if float(osd.get("orientation_conf", 0)) < MIN_OSD_CONFIDENCE:
            return 0
        return int(osd.get("rotate", 0)) % 360
