"""Errors as JSON with a clear message; never a stack trace to a client."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from groundwork.errors import (
    CapabilityUnavailable,
    EngineUnavailable,
    GroundworkError,
    InvalidRequest,
    NotFound,
)
from retrieval_api.deps import Unauthorized

logger = logging.getLogger(__name__)


def error_response(status: int, error: str, message: str, **extra: object) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": error, "message": message, **extra})


class DrillDownRefused(Exception):
    """A chunk id that was not handed to this key: the error names the valid ones."""

    def __init__(self, message: str, valid_ids: list[str]) -> None:
        super().__init__(message)
        self.valid_ids = valid_ids


def install_error_handlers(app: FastAPI) -> None:
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

    @app.exception_handler(DrillDownRefused)
    def _drill_down(_: Request, exc: DrillDownRefused) -> JSONResponse:
        return error_response(404, "unknown_id", str(exc), valid_ids=exc.valid_ids)

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
