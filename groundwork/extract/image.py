"""Images: OCR through the OcrProvider port. Pillow checks the image first, with
its decompression-bomb ceiling, so a 1 KB file claiming 100k x 100k pixels is
refused before anything renders it."""

from __future__ import annotations

import io
import warnings

from PIL import Image

from groundwork.documents import FailureReason
from groundwork.extract.base import Extracted, ExtractionContext, Refused
from groundwork.extract.ocr import ocr_blocks

MAX_PIXELS = 100_000_000


def extract_image(data: bytes, ctx: ExtractionContext) -> Extracted:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
                if width * height > MAX_PIXELS:
                    raise Refused(
                        FailureReason.TOO_LARGE,
                        f"{width}x{height} pixels; the limit is {MAX_PIXELS} pixels",
                    )
                image.verify()
    except Refused:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise Refused(FailureReason.TOO_LARGE, str(exc)) from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise Refused(FailureReason.MALFORMED, f"not a readable image: {exc}") from exc
    if ctx.ocr is None:
        raise Refused(
            FailureReason.NO_TEXT_LAYER, "an image has no text layer and OCR is not configured"
        )
    result = ctx.ocr.recognize(data)
    found = ocr_blocks(result, page=1)
    notes = (
        [f"page rotated {result.rotation_degrees} degrees before OCR"]
        if result.rotation_degrees
        else []
    )
    return Extracted(blocks=found, warnings=notes)
