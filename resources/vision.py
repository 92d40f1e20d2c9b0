"""VisionProvider adapters. No image-description model ships inside any
registry package that works offline here, so the only adapter without a
configured endpoint says so: it raises CapabilityUnavailable instead of
returning an empty or invented description."""

from __future__ import annotations

from groundwork.errors import CapabilityUnavailable
from groundwork.ports import ImageDescription


class UnconfiguredVision:
    def describe(self, image: bytes) -> ImageDescription:
        raise CapabilityUnavailable(
            "image description is unavailable: no vision model endpoint is configured "
            "(OCR text of the image is available through extraction)"
        )
