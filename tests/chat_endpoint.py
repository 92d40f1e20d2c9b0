"""A loopback server speaking the OpenAI chat-completions wire format: the
stand-in for an external model endpoint (never for one of our engines) that
the summarizer, answerer, judge and vision tests talk to."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], str]


class ChatEndpoint:
    """Answers POST /v1/chat/completions with `reply(request body)`; a reply
    that raises ValueError is a 400, another path a 404, and a `status` other
    than 200 makes every request fail with it. Every request body is kept."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.received: list[dict[str, Any]] = []
        self.status = 200
        self.root = ""  # http://127.0.0.1:<port>, set once serving

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL (what GROUNDWORK_*_URL names)."""
        return f"{self.root}/v1"


@contextmanager
def serving(reply: Reply) -> Iterator[ChatEndpoint]:
    endpoint = ChatEndpoint(reply)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            endpoint.received.append(body)
            status, payload = endpoint.status, None
            if self.path != "/v1/chat/completions":
                status = 404
            elif status == 200:
                try:
                    payload = {
                        "id": f"chatcmpl-{len(endpoint.received)}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": endpoint.reply(body)},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }
                except ValueError as exc:
                    status, payload = 400, {"error": {"message": str(exc)}}
            data = json.dumps(payload or {"error": {"message": "refused"}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    endpoint.root = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
