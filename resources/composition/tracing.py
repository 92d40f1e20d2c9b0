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
processor exporting over OTLP/HTTP off the request path. The engine calls are
traced by OpenTelemetry's own instrumentations: psycopg (PostgreSQL, the
catalog and pgvector, pooled connections included, since it wraps
`Connection.connect`) and urllib3 (opensearch-py's transport). Instrument
before the platform connects: connections opened earlier are not wrapped.
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
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
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
        PsycopgInstrumentor().instrument(tracer_provider=provider)
        URLLib3Instrumentor().instrument(tracer_provider=provider)
        _provider = provider
        return provider


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
