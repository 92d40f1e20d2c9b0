"""ASGI entry point: `uvicorn retrieval_api.main:app`. The platform connects
on first request, not at import."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from resources.composition.platform import Platform, connect
from resources.composition.settings import GroundworkSettings
from retrieval_api.app import create_app
from retrieval_api.collector import tune_for_serving

_platform: Platform | None = None
_lock = threading.Lock()


def _platform_factory() -> Platform:
    global _platform
    with _lock:
        if _platform is None:
            _platform = connect(GroundworkSettings.from_env(), serving=True)
        return _platform


@asynccontextmanager
async def _serving(_: FastAPI) -> AsyncIterator[None]:
    tune_for_serving()
    yield


app = create_app(_platform_factory, lifespan=_serving)
