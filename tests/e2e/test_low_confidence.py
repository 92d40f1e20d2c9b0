"""Low OCR confidence, end to end: a blurred scan goes through the Dagster
assets with the real OCR engine, and everywhere its text surfaces the doubt
goes with it: the document's warning, `low_confidence` in `/v1/files` and on
read windows, and on citations, whose hits are demoted in the ranking."""

from __future__ import annotations

import io
import random
import shutil
import uuid

import dagster as dg
import pytest
from fastapi.testclient import TestClient
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from groundwork.retrieval.kernel import RetrievalPolicy
from resources.composition.platform import Platform
from retrieval_api.app import create_app
from tests.e2e.helpers import resource, run_pipeline

pytestmark = pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="tesseract-ocr is not installed (./run installs it)"
)
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def blurred_scan() -> bytes:
    """Readable, but only just: tesseract reads it at about 0.4-0.6 confidence."""
    font = ImageFont.truetype(FONT, 40)
    image = Image.new("L", (1400, 300), 255)
    draw = ImageDraw.Draw(image)
    draw.text((40, 60), "Quarterly replica lag report", font=font, fill=0)
    draw.text((40, 160), "storage quota exceeded twice", font=font, fill=0)
    image = image.filter(ImageFilter.GaussianBlur(2.0))
    rng = random.Random(1)
    pixels = image.load()
    assert pixels is not None
    for _ in range(30_000):
        pixels[rng.randrange(1400), rng.randrange(300)] = rng.choice((0, 255))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


@pytest.fixture(scope="module")
def scanned(platform: Platform, index_prefix: str) -> tuple[str, dict[str, str]]:
    tenant = f"lc-{uuid.uuid4().hex[:8]}"
    folder = platform.settings.inbox_dir / tenant
    folder.mkdir(parents=True)
    (folder / "blurred.png").write_bytes(blurred_scan())
    (folder / "clean.md").write_text(
        "# Replica lag\n\nThe quarterly replica lag report: storage quota exceeded twice.\n"
    )
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    for result in run_pipeline(
        dg.DagsterInstance.ephemeral(),
        tenant,
        platform.settings.default_model_key,
        resource(index_prefix),
    ):
        assert result.success
    _, secret = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "lc")
    return tenant, {"Authorization": f"Bearer {secret}"}


def test_low_confidence_reaches_every_surface(
    platform: Platform, scanned: tuple[str, dict[str, str]]
) -> None:
    _, headers = scanned
    client = TestClient(create_app(lambda: platform))
    files = client.get("/v1/files", headers=headers).json()["files"]
    by_name = {f["filename"]: f for f in files}
    assert by_name["blurred.png"]["low_confidence"] is True
    assert by_name["clean.md"]["low_confidence"] is False
    source_id = by_name["blurred.png"]["source_id"]

    status = client.get(f"/v1/sources/{source_id}/status", headers=headers).json()
    assert status["low_confidence"] is True
    assert any("confidence" in w.lower() for w in status["warnings"]), status["warnings"]

    window = client.get(f"/v1/sources/{source_id}/read", headers=headers).json()
    assert window["outcome"] == "window" and window["low_confidence"] is True
    assert any(b["confidence"] is not None and b["confidence"] < 0.7 for b in window["blocks"])

    found = client.post(
        "/v1/search",
        json={"query": "quarterly replica lag report storage quota", "limit": 10},
        headers=headers,
    ).json()
    hits = {h["filename"]: h for h in found["hits"]}
    scan, clean = hits["blurred.png"], hits["clean.md"]
    assert scan["citation"]["low_confidence"] is True
    assert clean["citation"]["low_confidence"] is False
    # demoted: its fused score is the reciprocal-rank terms times the weight
    k = RetrievalPolicy().rrf_k
    weight = RetrievalPolicy().low_confidence_weight
    weights = dict(RetrievalPolicy().leg_weights)
    undemoted = sum(weights[leg] / (k + rank) for leg, rank in scan["leg_ranks"].items())
    assert scan["score"] == pytest.approx(undemoted * weight)
    assert clean["rank"] < scan["rank"]
