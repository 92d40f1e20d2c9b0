"""ASGI entry point: `uvicorn retrieval_api.main:app`. The platform connects
on first request, not at import."""

from __future__ import annotations

import threading

from resources.platform import Platform, connect
from resources.settings import GroundworkSettings
from retrieval_api.app import create_app

_platform: Platform | None = None
_lock = threading.Lock()


def _platform_factory() -> Platform:
    global _platform
    with _lock:
        if _platform is None:
            _platform = connect(GroundworkSettings.from_env(), serving=True)
        return _platform


app = create_app(_platform_factory)
