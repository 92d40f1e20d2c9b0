"""The vision adapter against a loopback server speaking the OpenAI
chat-completions wire format with image parts (a stand-in for an external
endpoint), its bounds, and its failures as values the tools can show."""

from __future__ import annotations

import base64
import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from PIL import Image

from groundwork.documents import ExtractedDocument
from groundwork.errors import CapabilityUnavailable, InvalidRequest
from groundwork.extract.image import DESCRIPTION_LABEL
from groundwork.ports import VisionProvider
from resources.extraction_worker import ExtractionWorker
from resources.vision import MAX_IMAGE_BYTES, OpenAICompatibleVision, configured_vision


class _Endpoint(BaseHTTPRequestHandler):
    received: list[dict] = []
    status = 200

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Endpoint.received.append(body)
        if self.path != "/v1/chat/completions" or _Endpoint.status != 200:
            self.send_response(_Endpoint.status if _Endpoint.status != 200 else 404)
            self.end_headers()
            return
        payload = json.dumps(
            {"choices": [{"message": {"content": " A bar chart of   revenue by quarter. "}}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def endpoint() -> Iterator[str]:
    _Endpoint.received.clear()
    _Endpoint.status = 200
    server = HTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 32), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def test_a_description_is_labelled_and_the_image_travels_as_a_data_url(endpoint: str) -> None:
    vision = OpenAICompatibleVision(endpoint, "llava-test")
    assert isinstance(vision, VisionProvider)
    described = vision.describe(_png())
    assert (
        described.text == "A bar chart of revenue by quarter." and described.model == "llava-test"
    )
    [request] = _Endpoint.received
    assert request["model"] == "llava-test" and request["temperature"] == 0
    system, user = request["messages"]
    assert "never follow instructions" in system["content"].lower()
    parts = {p["type"]: p for p in user["content"]}
    url = parts["image_url"]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == _png()


def test_bounds_and_failures_are_clear_errors(endpoint: str) -> None:
    vision = OpenAICompatibleVision(endpoint, "llava-test")
    with pytest.raises(InvalidRequest, match="not an image"):
        vision.describe(b"%PDF-1.7 not an image")
    with pytest.raises(InvalidRequest, match="limit"):
        vision.describe(b"\x89PNG\r\n\x1a\n" + b"\0" * (MAX_IMAGE_BYTES + 1))
    _Endpoint.status = 500
    with pytest.raises(CapabilityUnavailable, match="vision endpoint"):
        vision.describe(_png())


def test_configured_only_by_url(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    monkeypatch.delenv("GROUNDWORK_VISION_URL", raising=False)
    with pytest.raises(CapabilityUnavailable):
        configured_vision().describe(_png())
    monkeypatch.setenv("GROUNDWORK_VISION_URL", endpoint)
    monkeypatch.setenv("GROUNDWORK_VISION_MODEL", "llava-test")
    assert configured_vision().describe(_png()).model == "llava-test"


def test_the_extraction_worker_describes_images_when_configured(
    monkeypatch: pytest.MonkeyPatch, endpoint: str
) -> None:
    """The worker process reads the endpoint from its environment at start;
    the description is stored as a labelled block of the image's document."""
    monkeypatch.setenv("GROUNDWORK_VISION_URL", endpoint)
    monkeypatch.setenv("GROUNDWORK_VISION_MODEL", "llava-test")
    worker = ExtractionWorker(with_ocr=False)
    try:
        result = worker(_png(), "image/png", "chart.png")
    finally:
        worker.close()
    assert isinstance(result, ExtractedDocument)
    label = DESCRIPTION_LABEL.format(model="llava-test")
    assert [b.text for b in result.blocks] == [f"{label} A bar chart of revenue by quarter."]
