"""ASGI entry point: `uvicorn retrieval_api.main:app`. The platform connects
on first request, not at import."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from resources.composition.platform import Platform, connect
from resources.composition.settings import GroundworkSettings
from resources.composition.tracing import start_tracing, stop_tracing
from retrieval_api.app import create_app
from retrieval_api.collector import tune_for_serving
from retrieval_api.request_log import log_as_json, trace_requests

_platform: Platform | None = None
_lock = threading.Lock()


def _platform_factory() -> Platform:
    global _platform
    with _lock:
        if _platform is None:
            _platform = connect(GroundworkSettings.from_env(), serving=True)
        return _platform


@asynccontextmanager
async def _serving(served: FastAPI) -> AsyncIterator[None]:
    """Tracing starts before the platform connects (on the first request), so
    its pooled connections are the instrumented ones; with tracing on, each
    request also gets its JSON line (trace id, tenant, request id), while off
    the log stays at warnings as the supervisor's `--log-level` asks."""
    tune_for_serving()
    tracing = start_tracing(GroundworkSettings.from_env(), "groundwork-api")
    log_as_json(logging.INFO if tracing is not None else logging.WARNING)
    if tracing is not None:
        trace_requests(served)
    try:
        yield
    finally:
        stop_tracing()


app = create_app(_platform_factory, lifespan=_serving)
