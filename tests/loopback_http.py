"""The loopback HTTP plumbing the stand-in endpoints share: a JSON answer, and
a threaded server on a free port for the length of a block (it lives in
testbed/loopback_http.py, so the benches' loopback web site serves through the
same one)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from testbed.loopback_http import loopback_server

__all__ = ["loopback_server", "send_json"]


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
