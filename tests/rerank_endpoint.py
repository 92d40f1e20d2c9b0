"""A loopback server speaking the `/rerank` wire formats (Cohere/Jina/vLLM and
TEI): the stand-in for a reranker a user runs (never for one of our engines).
It scores a document by how many of the query's words it contains, so a test
knows the order a real cross-encoder would be asked for."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.loopback_http import loopback_server, send_json


class RerankEndpoint:
    def __init__(self, answer_format: str) -> None:
        self.answer_format = answer_format  # "cohere" or "tei": the envelope it answers in
        self.received: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.delay = 0.0
        self.status = 200
        self.url = ""

    @staticmethod
    def score(query: str, text: str) -> float:
        words = set(query.lower().split())
        return float(sum(1 for w in text.lower().split() if w in words))


@contextmanager
def serving(answer_format: str = "cohere") -> Iterator[RerankEndpoint]:
    endpoint = RerankEndpoint(answer_format)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            endpoint.received.append(body)
            endpoint.headers.append(dict(self.headers))
            if endpoint.delay:
                time.sleep(endpoint.delay)
            if self.path != "/rerank":
                self.send_error(404)
                return
            if endpoint.status != 200:
                self.send_error(endpoint.status)
                return
            texts = body.get("documents") or body.get("texts") or []
            scored = [(i, endpoint.score(body["query"], t)) for i, t in enumerate(texts)]
            scored.sort(key=lambda item: -item[1])
            payload: Any
            if endpoint.answer_format == "tei":
                payload = [{"index": i, "score": s} for i, s in scored]
            else:
                payload = {"results": [{"index": i, "relevance_score": s} for i, s in scored]}
            send_json(self, 200, payload)

        def log_message(self, *args: object) -> None:
            pass

    with loopback_server(Handler) as root:
        endpoint.url = root
        yield endpoint
