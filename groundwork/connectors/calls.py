"""How the sync service calls a source: retried with backoff when the source
asks for it, and listed one page ahead.

Listing is the floor of a pass over an unchanged source (about 1 s per
1,000-key S3 page on the loaded 2-core test machine, mostly the server and
the XML), so the next page is fetched while the current one is compared and
registered; pages are still handled in order, one at a time, so the cursor
semantics are unchanged.
"""

from __future__ import annotations

import hashlib
import queue
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

from groundwork.connectors.port import ConnectorError

T = TypeVar("T")

#: tries of one call to a source, and the pauses between them when the source
#: names none (a throttled store asks for seconds; longer outages are the next pass's)
TRIES = 4
BACKOFF = (0.5, 2.0, 8.0)
#: a Retry-After longer than this is not waited for inside a pass
MAX_WAIT = 30.0


def pause_for(exc: ConnectorError, attempt: int) -> float:
    pause = (
        exc.retry_after if exc.retry_after is not None else BACKOFF[min(attempt, len(BACKOFF) - 1)]
    )
    return min(pause, MAX_WAIT)


def with_retries(call: Callable[[], T], sleep: Callable[[float], None]) -> T:
    """`call`, tried again on a retryable ConnectorError after the source's
    Retry-After or the next backoff pause; the last error is raised."""
    for attempt in range(TRIES):
        try:
            return call()
        except ConnectorError as exc:
            if not exc.retryable or attempt == TRIES - 1:
                raise
            sleep(pause_for(exc, attempt))
    raise AssertionError("unreachable")


_END = object()


def one_ahead(pages: Iterator[T]) -> Iterator[T]:
    """`pages`, with the next one fetched in a thread while the caller works
    on the current one; an error of the listing is raised where the page it
    stopped would have been. Abandoning the iterator stops the thread after
    the page it is fetching."""
    handoff: queue.Queue[object] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def produce() -> None:
        try:
            for page in pages:
                if stop.is_set():
                    return
                handoff.put(page)
            handoff.put(_END)
        except BaseException as exc:  # handed to the consumer, raised there
            handoff.put(exc)

    thread = threading.Thread(target=produce, name="connector-listing", daemon=True)
    thread.start()
    try:
        while True:
            got = handoff.get()
            if got is _END:
                return
            if isinstance(got, BaseException):
                raise got
            yield got  # type: ignore[misc]
    finally:
        stop.set()
        while thread.is_alive():
            try:
                handoff.get_nowait()
            except queue.Empty:
                thread.join(0.05)


def spool(stream: BinaryIO, cap: int, folder: Path, kind: str) -> tuple[Path, str, int] | None:
    """An item's bytes to a work file in `folder`, hashed on the way (the
    registration path stores a file without holding it in memory); None past
    `cap`, the rest not read. The stream is closed either way."""
    digest = hashlib.sha256()
    size = 0
    try:
        with tempfile.NamedTemporaryFile(dir=folder, delete=False) as handle:
            while piece := stream.read(1024 * 1024):
                size += len(piece)
                if size > cap:
                    Path(handle.name).unlink()
                    return None
                digest.update(piece)
                handle.write(piece)
    except OSError as exc:
        raise ConnectorError(kind, None, f"reading failed: {exc}", retryable=True) from exc
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    return Path(handle.name), digest.hexdigest(), size
