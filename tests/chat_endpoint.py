"""A loopback server speaking the OpenAI chat-completions wire format: the
stand-in for an external model endpoint (never for one of our engines) that
the summarizer, answerer, judge and vision tests talk to."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.loopback_http import loopback_server, send_json

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
            send_json(self, status, payload or {"error": {"message": "refused"}})

        def log_message(self, *args: object) -> None:
            return

    with loopback_server(Handler) as root:
        endpoint.root = root
        yield endpoint
