"""Where a request's blocking work runs: one hop to a worker thread.

A synchronous handler behind the app-wide route-scope dependency crossed to a
worker thread twice: once to look its key up, once to run. Each crossing wakes
a thread and the event loop again; at 8 clients the two cost ~1.5 points of
the API's share of a search's CPU (bench/search_profile.py, 32% -> 30-31%). A
hot route marked `authorize_in_handler_thread` crosses once: its key is looked
up, its scope required and its work done in the same thread.

The crossing is asyncio's own (`run_in_executor` on this module's threads), not
anyio's: 24 against 59 us of CPU per crossing at 8 concurrent callers
(measured in isolation), without the cancel scope and capacity limiter a
synchronous call cannot use. The threads are as many as the requests admission
lets run at once.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from fastapi import Request

from groundwork.catalog import Tenant
from groundwork.ports import Principal
from groundwork.services.platform import PlatformPorts
from retrieval_api.admission import MAX_ACTIVE
from retrieval_api.deps import caller_tenant, get_platform
from retrieval_api.scopes import authorize

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Caller:
    """The authorized caller: its principal, the platform behind its tenant wall,
    and its tenant as its key's read found it (this request only)."""

    who: Principal
    platform: PlatformPorts
    tenant: Tenant | None


@functools.cache
def _request_threads() -> ThreadPoolExecutor:
    """Made on first use, never at import; asked for on the event loop's thread
    only, so made once."""
    return ThreadPoolExecutor(MAX_ACTIVE, thread_name_prefix="groundwork-request")


async def in_one_thread(request: Request, work: Callable[[Caller], R]) -> R:
    """`work` for the authorized caller, in one worker thread; a refused key or
    scope raises there, before `work` starts."""
    context = contextvars.copy_context()  # as anyio's crossing carries it
    return await asyncio.get_running_loop().run_in_executor(
        _request_threads(), context.run, _authorized, request, work
    )


def _authorized(request: Request, work: Callable[[Caller], R]) -> R:
    who = authorize(request)
    platform = get_platform(request).for_tenant(who.tenant_id)
    return work(Caller(who, platform, caller_tenant(request)))
