"""Admission control: beyond what the machine can serve, say so at once.

Without it, every request beyond the server's capacity waited in the
threadpool queue until its client timed out: a pile-up where even the health
check stalled. Here at most `max_active` requests run in the app at a time;
up to `max_waiting` more wait at most `max_wait_seconds` for a slot; anything
beyond gets 503 with Retry-After, a clear answer a client can back off on.
The health endpoint is never queued: it must answer under load.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retrieval_api.metrics import ServingMetrics

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: requests running in one API process at once (a request is mostly waiting on
#: the engines, so a few more than the cores keep them busy)
MAX_ACTIVE = 8
#: requests waiting for a slot before the next one is refused
MAX_WAITING = 64
MAX_WAIT_SECONDS = 2.0
NEVER_QUEUED = frozenset({"/v1/health", "/metrics"})


class AdmissionControl:
    def __init__(
        self,
        app: ASGIApp,
        max_active: int = MAX_ACTIVE,
        max_waiting: int = MAX_WAITING,
        max_wait_seconds: float = MAX_WAIT_SECONDS,
        metrics: ServingMetrics | None = None,
    ) -> None:
        self.app = app
        if metrics is not None:
            metrics.admission = self  # its waiting and refused counts are scraped
        self.max_active = max_active
        self.max_waiting = max_waiting
        self.max_wait_seconds = max_wait_seconds
        self.waiting = 0
        self.refused = 0
        self._slots: asyncio.Semaphore | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in NEVER_QUEUED:
            await self.app(scope, receive, send)
            return
        if self._slots is None:  # created on the server's own event loop
            self._slots = asyncio.Semaphore(self.max_active)
        if not self._slots.locked():
            await self._slots.acquire()  # a free slot: taken without suspending
        elif self.waiting >= self.max_waiting:
            await self._overloaded(send)
            return
        else:
            self.waiting += 1
            try:
                await asyncio.wait_for(self._slots.acquire(), self.max_wait_seconds)
            except TimeoutError:
                await self._overloaded(send)
                return
            finally:
                self.waiting -= 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._slots.release()

    async def _overloaded(self, send: Send) -> None:
        self.refused += 1
        body = json.dumps(
            {
                "error": "overloaded",
                "message": "the server is at capacity",
                "alternative": "retry after the number of seconds in Retry-After",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", b"1"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
