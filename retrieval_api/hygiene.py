"""Request hygiene before routing (pure ASGI, so file streams stay streams):
JSON bodies are capped (413) and depth-bounded, and every path segment, query
value and JSON string is checked by the application layer's rule
(groundwork.services.hygiene) for NUL and lone surrogates (422 naming the field).
Raw file bodies (one-shot registration, upload parts) are bytes, not text, and
are capped by their own routes."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

from groundwork.errors import Refused
from groundwork.services.hygiene import MAX_DEPTH, check_value

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_JSON_BODY_BYTES = 4 * 1024 * 1024


def _raw_body_route(method: str, path: str) -> bool:
    return (method == "POST" and path.rstrip("/") == "/v1/sources") or (
        method == "PUT" and path.startswith("/v1/uploads/")
    )


async def _reply(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


def _depth(value: Any, depth: int = 0) -> int:
    if depth > MAX_DEPTH:
        return depth
    if isinstance(value, dict):
        return max((_depth(v, depth + 1) for v in value.values()), default=depth)
    if isinstance(value, list):
        return max((_depth(v, depth + 1) for v in value), default=depth)
    return depth


class RequestHygiene:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        try:
            check_value(path, "path")
            query = scope.get("query_string", b"").decode("latin-1")
            for name, value in parse_qsl(query, keep_blank_values=True):
                check_value(value, name)
        except Refused as exc:
            await _reply(send, 422, _refusal(exc))
            return
        if method not in ("POST", "PUT", "PATCH") or _raw_body_route(method, path):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_JSON_BODY_BYTES:
            await _reply(send, 413, _too_large())
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body.extend(message.get("body", b""))
            more = message.get("more_body", False)
            if len(body) > MAX_JSON_BODY_BYTES:
                await _reply(send, 413, _too_large())
                return
        if body:
            try:
                parsed = json.loads(body)
            except RecursionError:
                await _reply(send, 422, _invalid("the JSON body is nested too deeply"))
                return
            except ValueError:
                parsed = None  # the framework answers malformed JSON in the project's shape
            try:
                if _depth(parsed) > MAX_DEPTH:
                    raise Refused(
                        f"the JSON body is nested more than {MAX_DEPTH} levels deep",
                        "send a flatter structure",
                        code="invalid",
                    )
                check_value(parsed, "")
            except Refused as exc:
                await _reply(send, 422, _refusal(exc))
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)


def _refusal(exc: Refused) -> dict[str, Any]:
    return {
        "error": exc.code,
        "message": exc.message,
        "alternative": exc.alternative,
        **exc.details,
    }


def _invalid(message: str) -> dict[str, Any]:
    return {"error": "invalid", "message": message, "alternative": "send a flatter structure"}


def _too_large() -> dict[str, Any]:
    return {
        "error": "too-large",
        "message": f"JSON bodies are limited to {MAX_JSON_BODY_BYTES} bytes",
        "alternative": "send less per request (files go through /v1/uploads)",
    }
