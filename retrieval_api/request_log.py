"""Each request's id, its line in the structured (JSON) log, and the request
span's tenant.

A request carries an id: the caller's `X-Request-Id` when it sends a sane one
(a gateway's, so its logs and ours join), else one made here; it is answered
in the `X-Request-Id` header. When the response is sent, one JSON line goes to
the `groundwork.requests` logger with the id, the caller's tenant, the route
template, status and duration, and the trace and span ids of the request's
span: a slow line in the log leads to its trace in the receiver. With tracing
on, the request span gets `groundwork.tenant` and `groundwork.request_id` too,
so the receiver finds a tenant's or a request's traces by tag.

Every other record of the serving process is JSON too (`JsonLogFormatter`),
with the trace ids of the span current when it was logged and the request id.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import time
import uuid
from datetime import UTC, datetime

from fastapi import FastAPI
from opentelemetry import trace
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from groundwork.tracing import TENANT

REQUEST_ID_HEADER = b"x-request-id"
REQUEST_ID = "groundwork.request_id"
#: a caller's id is kept when it looks like an id (a gateway's uuid, a hex or
#: dotted trace token), never anything that could forge a log line
_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

request_logger = logging.getLogger("groundwork.requests")
current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar(
    "groundwork_request_id", default=""
)


class RequestContext:
    """ASGI middleware inside the tracing one (its span is current here)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _request_id(scope)
        token = current_request_id.set(request_id)
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                _tag_span(scope, request_id)  # before the response: the span ends with it
                message["headers"] = [
                    *message.get("headers", []),
                    (REQUEST_ID_HEADER, request_id.encode()),
                ]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            current_request_id.reset(token)
            _finish(scope, request_id, status, time.perf_counter() - started)


def _request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == REQUEST_ID_HEADER:
            given = value.decode("latin-1")
            if _SANE_ID.match(given):
                return given
            break
    return uuid.uuid4().hex


def _tenant(scope: Scope) -> str:
    principal = scope.get("state", {}).get("principal")
    return getattr(principal, "tenant_id", None) or "-"


def _tag_span(scope: Scope, request_id: str) -> None:
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute(TENANT, _tenant(scope))
        span.set_attribute(REQUEST_ID, request_id)


def _finish(scope: Scope, request_id: str, status: int, seconds: float) -> None:
    if request_logger.isEnabledFor(logging.INFO):
        tenant = _tenant(scope)
        route = getattr(scope.get("route"), "path", None) or "unmatched"
        request_logger.info(
            "%s %s %d",
            scope["method"],
            route,
            status,
            extra={
                "request_id": request_id,
                "tenant": tenant,
                "route": route,
                "method": scope["method"],
                "status": status,
                "duration_ms": round(seconds * 1000, 2),
            },
        )


#: the fields a record carries in `extra` that the JSON line keeps
_EXTRA_FIELDS = ("request_id", "tenant", "route", "method", "status", "duration_ms")


class JsonLogFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the request
    id, and the trace and span ids of the span current at the call (empty when
    tracing is off or the request was not sampled)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": current_request_id.get(),
        }
        for name in _EXTRA_FIELDS:
            if name in record.__dict__:
                line[name] = record.__dict__[name]
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            line["trace_id"] = format(context.trace_id, "032x")
            line["span_id"] = format(context.span_id, "016x")
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def log_as_json(level: int = logging.INFO) -> None:
    """The serving process's records as JSON lines on stderr (its log file under
    `groundwork up`); the request lines at INFO."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLogFormatter())
    for name in ("groundwork", "retrieval_api"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = False


def trace_requests(app: FastAPI) -> None:
    """Wrap the app in OpenTelemetry's FastAPI middleware (the request span, named
    by route template). The app's middleware stack is built on its first call
    (the lifespan's), so it is dropped here and rebuilt, traced, on the next;
    the per-message `receive`/`send` spans are left out (two spans per request
    that say nothing an operator asks)."""
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(app, exclude_spans=["receive", "send"])
    app.middleware_stack = None
