"""Prometheus metrics of the serving process, at GET /metrics.

Per request: latency by route template (never the raw path: bounded labels),
method and status class; requests and errors per tenant (the caller's key's
tenant; `-` before authentication). Admission: requests waiting for a slot
and refused with 503. Read at scrape time, at most every `SCRAPE_CACHE_SECONDS`:
the pipeline's backlog per tenant and stage with the oldest waiting version's
age (groundwork.services.backlog), and each engine's health
(groundwork.services.health). Each API process keeps its own registry
(`--workers N`: scrape each, or run one worker per port).

Off the hot path: a request costs one histogram observation and one counter
increment (a few microseconds); nothing is read from an engine per request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from groundwork.services.backlog import pipeline_backlog
from groundwork.services.health import platform_health

#: searches answer in milliseconds; uploads and renders take seconds
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
SCRAPE_CACHE_SECONDS = 15.0
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class ServingMetrics:
    def __init__(self, platform_factory: Callable[[], Any]) -> None:
        self.registry = CollectorRegistry()
        self.latency = Histogram(
            "groundwork_http_request_seconds",
            "HTTP request latency by route template, method and status class",
            ("route", "method", "status"),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.requests = Counter(
            "groundwork_tenant_requests",
            "HTTP requests by the caller's tenant and outcome (ok, client_error, server_error)",
            ("tenant", "outcome"),
            registry=self.registry,
        )
        self.admission: Any = None  # the AdmissionControl middleware, once built
        self.registry.register(_StateCollector(self, platform_factory))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class RequestMetrics:
    """Outermost ASGI middleware: sees every response, admission's 503s included."""

    def __init__(self, app: ASGIApp, metrics: ServingMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == "/metrics":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            klass = f"{status // 100}xx"
            self.metrics.latency.labels(template, scope["method"], klass).observe(
                time.perf_counter() - started
            )
            principal = scope.get("state", {}).get("principal")
            tenant = getattr(principal, "tenant_id", None) or "-"
            outcome = "ok" if status < 400 else "client_error" if status < 500 else "server_error"
            self.metrics.requests.labels(tenant, outcome).inc()


class _StateCollector(Collector):
    """Admission state live; backlog and engine health read at most every
    SCRAPE_CACHE_SECONDS (a scrape every 5 s must not become engine load)."""

    def __init__(self, metrics: ServingMetrics, platform_factory: Callable[[], Any]) -> None:
        self.metrics = metrics
        self.platform_factory = platform_factory
        self._lock = threading.Lock()
        self._cached: tuple[float, list[Metric]] = (0.0, [])

    def collect(self) -> Iterator[Metric]:
        admission = self.metrics.admission
        if admission is not None:
            yield GaugeMetricFamily(
                "groundwork_admission_waiting",
                "requests waiting for a serving slot",
                value=admission.waiting,
            )
            refused = GaugeMetricFamily(
                "groundwork_admission_refused",
                "requests refused with 503 because the server was at capacity (since start)",
                value=admission.refused,
            )
            yield refused
        with self._lock:
            at, cached = self._cached
            if time.monotonic() - at > SCRAPE_CACHE_SECONDS or not cached:
                cached = self._read()
                self._cached = (time.monotonic(), cached)
        yield from cached

    def _read(self) -> list[Metric]:
        platform = self.platform_factory()
        engines = GaugeMetricFamily(
            "groundwork_engine_up", "1 when the engine answers its probe", labels=("engine",)
        )
        report = platform_health(platform)
        for name, state in report.engines.items():
            engines.add_metric([name], 1.0 if state == "ok" else 0.0)
        backlog = GaugeMetricFamily(
            "groundwork_pipeline_backlog_versions",
            "versions waiting per tenant and stage",
            labels=("tenant", "stage"),
        )
        oldest = GaugeMetricFamily(
            "groundwork_pipeline_oldest_waiting_seconds",
            "seconds the tenant's oldest version with work has waited",
            labels=("tenant",),
        )
        for tenant in pipeline_backlog(platform.catalog):
            for stage, count in tenant.stages.items():
                backlog.add_metric([tenant.tenant_id, stage], float(count))
            oldest.add_metric([tenant.tenant_id], tenant.oldest_seconds)
        return [engines, backlog, oldest]
