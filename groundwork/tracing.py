"""Spans around the core's units of work, through the OpenTelemetry API only.

The core never configures tracing: until the edge installs an SDK provider
(resources/composition/tracing.py, when GROUNDWORK_OTLP_ENDPOINT is set) the
API's tracer is its no-op one, so a span here costs a context switch and
nothing is recorded or sent. Attribute names are the operator's query keys in
the receiver (`groundwork.tenant` finds one tenant's traces), so they are a
contract like an API field.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

P = ParamSpec("P")
R = TypeVar("R")

#: the instrumentation scope every core span carries
TRACER_NAME = "groundwork"
TENANT = "groundwork.tenant"
LEG = "groundwork.leg"


@functools.cache
def _tracer() -> trace.Tracer:
    """Asked on first use (never at import); the API's proxy forwards to the
    provider the edge installs later, so caching it here misses nothing."""
    return trace.get_tracer(TRACER_NAME)


@contextmanager
def span(name: str, **attributes: AttributeValue) -> Iterator[trace.Span]:
    """A child of the current span (a request's, a step's) for the block."""
    with _tracer().start_as_current_span(name, attributes=attributes) as current:
        yield current


def carried(work: Callable[P, R]) -> Callable[P, R]:
    """`work` to run on another thread inside the caller's current span: a pool
    thread has its own context, so a leg submitted bare would start a trace of
    its own (or none) instead of a child of the search."""
    context = contextvars.copy_context()

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return context.run(work, *args, **kwargs)

    return run
