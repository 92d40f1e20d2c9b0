"""Errors as JSON with a clear message; never a stack trace to a client."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from groundwork.errors import (
    CapabilityUnavailable,
    EngineUnavailable,
    GroundworkError,
    InvalidRequest,
    NotFound,
    Refused,
)
from retrieval_api.deps import Unauthorized

logger = logging.getLogger(__name__)


def error_response(status: int, error: str, message: str, **extra: object) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": error, "message": message, **extra})


#: HTTP status for each application refusal code (the codes are the core's)
REFUSAL_STATUS = {
    "forbidden": 403,
    "unknown_id": 404,
    "not_found": 404,
    "invalid": 422,
    "approval_required": 409,
    "stale_generation": 409,
    "exists": 409,
    "not_ready": 409,
    "limit": 429,
    "rate_limited": 429,
    "quota_exceeded": 413,
    "unavailable": 503,
    "unreadable": 422,
    "unsupported": 415,
    "render_failed": 500,
    "too-large": 413,
    "unsupported-type": 415,
    "type-mismatch": 415,
    "empty-file": 415,
    "invalid-size": 422,
    "approval-required": 409,
    "malware-found": 422,
    "unsupported-conversion": 415,
    "not-open": 409,
    "already-completed": 409,
    "incomplete": 409,
    "bad-offset": 409,
    "expired": 410,
    "forged": 403,
}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    def _framework(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        """Unknown routes, wrong methods and the like, in the project's shape."""
        codes = {404: "not_found", 405: "method_not_allowed", 413: "too-large"}
        return error_response(
            exc.status_code, codes.get(exc.status_code, "invalid_request"), str(exc.detail)
        )

    @app.exception_handler(Unauthorized)
    def _unauthorized(_: Request, exc: Unauthorized) -> JSONResponse:
        return error_response(401, "unauthorized", str(exc))

    @app.exception_handler(RequestValidationError)
    def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body')}: {e.get('msg')}"
            for e in exc.errors()
        )
        return error_response(422, "invalid_request", problems or "the request is not valid")

    @app.exception_handler(InvalidRequest)
    def _invalid_core(_: Request, exc: InvalidRequest) -> JSONResponse:
        return error_response(422, "invalid_request", str(exc))

    @app.exception_handler(Refused)
    def _refused(_: Request, exc: Refused) -> JSONResponse:
        response = error_response(
            REFUSAL_STATUS.get(exc.code, 400),
            exc.code,
            exc.message,
            alternative=exc.alternative,
            **exc.details,
        )
        retry_after = exc.details.get("retry_after_seconds")
        if retry_after is not None:  # a rate limit: when the next request is admitted
            response.headers["Retry-After"] = str(retry_after)
        return response

    @app.exception_handler(NotFound)
    def _not_found(_: Request, exc: NotFound) -> JSONResponse:
        return error_response(404, "not_found", str(exc))

    @app.exception_handler(EngineUnavailable)
    def _unavailable(_: Request, exc: EngineUnavailable) -> JSONResponse:
        logger.warning("engine unavailable: %s", exc)
        return error_response(503, "unavailable", "a storage engine is unavailable; retry shortly")

    @app.exception_handler(CapabilityUnavailable)
    def _capability(_: Request, exc: CapabilityUnavailable) -> JSONResponse:
        return error_response(501, "capability_unavailable", str(exc))

    @app.exception_handler(GroundworkError)
    def _groundwork(_: Request, exc: GroundworkError) -> JSONResponse:
        logger.exception("request failed", exc_info=exc)
        return error_response(500, "internal", "the request failed; the error has been logged")

    @app.exception_handler(Exception)
    def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected error", exc_info=exc)
        return error_response(500, "internal", "the request failed; the error has been logged")
