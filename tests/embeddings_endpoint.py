"""A loopback server speaking OpenAI's `/v1/embeddings` wire format, computing
with a real local model (the bundled MiniLM): the stand-in for an embedder a
user runs (never for one of our engines), so the provider conformance suite's
retrieval properties are measured on real vectors. Failures can be injected
(a status for the next N requests, a Retry-After, a truncated dimension)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from groundwork.ports import EmbeddingProvider
from tests.loopback_http import loopback_server, send_json


class EmbeddingsEndpoint:
    def __init__(self, backing: EmbeddingProvider) -> None:
        self.backing = backing
        self.received: list[dict[str, Any]] = []
        self.fail_next: list[int] = []  # statuses answered, one per request, first
        self.retry_after = ""
        self.dimension: int | None = None  # answer with vectors cut to this size
        self.url = ""  # the OpenAI-compatible base URL: http://127.0.0.1:<port>/v1


@contextmanager
def serving(backing: EmbeddingProvider) -> Iterator[EmbeddingsEndpoint]:
    endpoint = EmbeddingsEndpoint(backing)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                endpoint.received.append(body)
                status = endpoint.fail_next.pop(0) if endpoint.fail_next else 200
            if self.path != "/v1/embeddings":
                self.send_error(404)
                return
            if status != 200:
                self.send_response(status)
                if endpoint.retry_after:
                    self.send_header("Retry-After", endpoint.retry_after)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            vectors = endpoint.backing.embed_documents(body["input"])
            if endpoint.dimension is not None:
                vectors = [v[: endpoint.dimension] for v in vectors]
            payload = {
                "object": "list",
                "model": body.get("model", ""),
                # answered out of order on purpose: clients must sort by index
                "data": [
                    {"object": "embedding", "index": i, "embedding": list(v)}
                    for i, v in reversed(list(enumerate(vectors)))
                ],
            }
            send_json(self, 200, payload)

        def log_message(self, *args: object) -> None:
            pass

    with loopback_server(Handler) as root:
        endpoint.url = root + "/v1"
        yield endpoint
