"""A request body for a service running in a worker thread.

The services are synchronous; a body they consume part by part (an upload
part, a one-shot registration) is handed over as a blocking iterator whose
every step awaits the next part on the event loop. The service's size cap then
stops the sender while it streams, instead of buffering past the cap first.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio.from_thread
from fastapi import Request


def blocking_parts(request: Request) -> Iterator[bytes]:
    """The body's parts, for a worker thread started by `run_in_threadpool`
    (anyio's: it is what lets the thread wait on the event loop)."""
    stream = request.stream().__aiter__()

    async def following() -> bytes | None:
        try:
            return await stream.__anext__()
        except StopAsyncIteration:
            return None

    while (part := anyio.from_thread.run(following)) is not None:
        if part:
            yield part


def declared_length(request: Request) -> int | None:
    """The Content-Length header's size, when it is a number."""
    declared = request.headers.get("content-length")
    return int(declared) if declared and declared.isdigit() else None
