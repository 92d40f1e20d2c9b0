"""OpenTelemetry's SDK wired at the edge, when the settings ask for it.

The core speaks the OpenTelemetry API only (groundwork/tracing.py), which is a
no-op until a provider is installed; this module installs one when
GROUNDWORK_OTLP_ENDPOINT names an OTLP/HTTP receiver (the Collector, Jaeger,
Tempo...). Off (no endpoint), nothing is imported beyond the API and no
instrumentation is patched in, so a process without tracing pays nothing for
it: the API's spans stay non-recording and no engine call is wrapped.

On, each process gets a provider with its service name, a
ParentBased(TraceIdRatioBased(ratio)) sampler (a caller's sampled trace is
followed; a new trace is recorded with the configured share) and a batch
processor exporting over OTLP/HTTP off the request path. OpenSearch calls are
traced by OpenTelemetry's urllib3 instrumentation (opensearch-py's transport).
PostgreSQL statements are traced by this module's cursor (`traced_cursor`), not
OpenTelemetry's psycopg instrumentation: that one starts a span for every
statement, recorded or not, named from the rendered statement: a pool
checkout with two statements in an unsampled request cost +229 us of CPU with
it against +3 us with this cursor, which asks first whether the current span
records (bench/postgres_tracing.py; a search runs several checkouts, and at
ratio 0.1 nine requests in ten are unsampled). Install before
the platform connects: connections opened earlier keep the plain cursor.
"""

from __future__ import annotations

import threading
from typing import Any

from resources.composition.settings import GroundworkSettings

#: a batch leaves at least this often (ms): a trace shows up in the receiver within
#: a second or two, and a busy process sends one request per batch, not per span
EXPORT_DELAY_MS = 1000

_lock = threading.Lock()
_provider: Any = None


def start_tracing(settings: GroundworkSettings, service_name: str) -> Any:
    """Install the process's tracer provider and the engine instrumentations;
    None (and nothing installed) when tracing is off. Idempotent: a second call
    returns the provider the first installed."""
    global _provider
    if settings.otlp_endpoint is None:
        return None
    with _lock:
        if _provider is not None:
            return _provider
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.instrumentation.urllib3 import URLLib3Instrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

        provider = TracerProvider(
            resource=Resource.create({"service.name": service_name}),
            sampler=ParentBased(TraceIdRatioBased(settings.trace_sample_ratio)),
        )
        exporter = OTLPSpanExporter(endpoint=traces_url(settings.otlp_endpoint))
        provider.add_span_processor(
            BatchSpanProcessor(exporter, schedule_delay_millis=EXPORT_DELAY_MS)
        )
        trace.set_tracer_provider(provider)
        trace_postgres(provider)
        URLLib3Instrumentor().instrument(tracer_provider=provider)
        _provider = provider
        return provider


def traced_cursor(tracer: Any) -> type[Any]:
    """A psycopg cursor whose statements are CLIENT spans (`db.system`
    postgresql, the statement, the database) when the current span records, and
    plain calls otherwise: an unsampled request pays one context look-up per
    statement."""
    import psycopg
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind

    current = trace.get_current_span

    def statement_span(cursor: psycopg.Cursor[Any], query: Any) -> Any:
        text = query if isinstance(query, str) else query.as_string(cursor)
        if isinstance(text, bytes):
            text = text.decode(errors="replace")
        words = text.split(None, 1)
        return tracer.start_as_current_span(
            words[0].upper() if words else "postgresql",
            kind=SpanKind.CLIENT,
            attributes={
                "db.system": "postgresql",
                "db.name": cursor.connection.info.dbname,
                "db.statement": text,
            },
        )

    class TracedCursor(psycopg.Cursor[Any]):
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            if not current().is_recording():
                return super().execute(query, params, **kwargs)
            with statement_span(self, query):
                return super().execute(query, params, **kwargs)

        def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> None:
            if not current().is_recording():
                return super().executemany(query, params_seq, **kwargs)
            with statement_span(self, query):
                return super().executemany(query, params_seq, **kwargs)

    return TracedCursor


def trace_postgres(provider: Any) -> None:
    """Every psycopg connection opened from now on (pools call
    `Connection.connect` too) gets the traced cursor, unless it was given a
    cursor class of its own."""
    import psycopg

    cursor = traced_cursor(provider.get_tracer("groundwork.postgresql"))
    plain_connect = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]

    def connect(cls: type[psycopg.Connection[Any]], *args: Any, **kwargs: Any) -> Any:
        conn = plain_connect(cls, *args, **kwargs)
        if conn.cursor_factory is psycopg.Cursor:
            conn.cursor_factory = cursor
        return conn

    psycopg.Connection.connect = classmethod(connect)  # type: ignore[assignment,method-assign]
    psycopg.connect = psycopg.Connection.connect  # the module's alias of the plain one


def traces_url(endpoint: str) -> str:
    """The receiver's base URL (as OTEL_EXPORTER_OTLP_ENDPOINT names it) or its
    full /v1/traces URL: either is accepted."""
    base = endpoint.rstrip("/")
    return base if base.endswith("/v1/traces") else f"{base}/v1/traces"


def stop_tracing() -> None:
    """Send what is buffered and stop exporting (a process about to exit)."""
    global _provider
    with _lock:
        if _provider is not None:
            _provider.shutdown()
