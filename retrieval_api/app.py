"""The FastAPI application: routers over the core, errors as JSON.

Handlers are synchronous where they call the blocking adapters (FastAPI runs
them in worker threads); the upload handler streams the body asynchronously
so its size cap stops the client instead of buffering past it.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.responses import JSONResponse

from groundwork.services.connectors import ConnectorPorts
from groundwork.services.health import platform_health
from groundwork.services.limits import RateLimiter
from groundwork.services.platform import PlatformPorts
from retrieval_api.admission import AdmissionControl
from retrieval_api.deps import ServedPlatform, WholePlatformDep
from retrieval_api.errors import install_error_handlers
from retrieval_api.hygiene import RequestHygiene
from retrieval_api.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from retrieval_api.metrics import RequestMetrics, ServingMetrics
from retrieval_api.rate_refusal import EarlyRateRefusal
from retrieval_api.request_log import RequestContext
from retrieval_api.routes import (
    artifacts,
    chunks,
    connectors,
    documents,
    files,
    limits,
    search,
    sources,
    tools,
    uploads,
)
from retrieval_api.schemas import ErrorOut
from retrieval_api.scopes import enforce_route_scope

Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]
ROUTERS: tuple[APIRouter, ...] = (
    search.router,
    sources.router,
    chunks.router,
    uploads.router,
    files.router,
    artifacts.router,
    documents.router,
    tools.router,
    limits.router,
    connectors.router,
)


def connector_ports(view: PlatformPorts) -> ConnectorPorts:
    """The connector services' ports on a tenant view (the connector catalog
    on its walled pool); routes reach them through deps, never this import."""
    from resources.connectors.ports import ConnectorPlatform

    return ConnectorPlatform(view)  # type: ignore[arg-type]  # a view of the composition root


def create_app(
    platform_factory: Callable[[], ServedPlatform], lifespan: Lifespan | None = None
) -> FastAPI:
    """`lifespan`: what the serving process does around serving (retrieval_api.main);
    an app made for a test leaves the process as it is."""
    app = FastAPI(
        lifespan=lifespan,
        title="Groundwork retrieval API",
        version="0.1.0",
        description="Hybrid (vector + keyword) search with citations, scoped by API key.",
        responses={
            401: {"model": ErrorOut},
            404: {"model": ErrorOut},
            422: {"model": ErrorOut},
            403: {"model": ErrorOut},
            503: {"model": ErrorOut},
        },
        dependencies=[Depends(enforce_route_scope)],
    )
    app.state.platform_factory = platform_factory
    app.state.connector_ports = connector_ports
    metrics = ServingMetrics(platform_factory)
    app.state.rate_limiter = RateLimiter()  # the process's rate buckets (retrieval_api.scopes)
    install_error_handlers(app)

    app.state.metrics = metrics
    app.add_api_route(
        "/metrics", prometheus, methods=["GET"], include_in_schema=False, response_model=None
    )
    app.add_api_route("/v1/health", health, methods=["GET"], response_model=None)
    for router in ROUTERS:
        app.include_router(router)
    app.add_middleware(RequestHygiene)  # type: ignore[arg-type]
    # an overloaded server refuses before parsing anything
    app.add_middleware(AdmissionControl, metrics=metrics)  # type: ignore[arg-type]
    # a known key over its rate is refused before admission, routing or its lookup
    app.add_middleware(EarlyRateRefusal, limiter=app.state.rate_limiter)  # type: ignore[arg-type]
    # outermost: every response is counted, admission's 503s included
    app.add_middleware(RequestMetrics, metrics=metrics)  # type: ignore[arg-type]
    # around everything of ours (inside the tracing middleware, when it is on):
    # the request id, the request span's tenant and the JSON request line
    app.add_middleware(RequestContext)  # type: ignore[arg-type]
    return app


def prometheus(request: Request, platform: WholePlatformDep) -> Response:
    """Prometheus exposition for the operator (GROUNDWORK_METRICS_TOKEN as a
    bearer token); off, it says so instead of answering empty."""
    token = platform.operator_token()
    if token is None:
        return JSONResponse(
            status_code=404,
            content={
                "error": "not_found",
                "message": "metrics are off",
                "alternative": "set GROUNDWORK_METRICS_TOKEN and scrape with it as a bearer token",
            },
        )
    given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    if not hmac.compare_digest(given.encode(), token.encode()):
        return JSONResponse(
            status_code=401,
            content={
                "error": "unauthorized",
                "message": "metrics need the operator's token",
                "alternative": "send Authorization: Bearer <GROUNDWORK_METRICS_TOKEN>",
            },
        )
    metrics: ServingMetrics = request.app.state.metrics
    return Response(metrics.exposition(), media_type=METRICS_CONTENT_TYPE)


def health(request: Request, platform: WholePlatformDep) -> dict[str, object] | JSONResponse:
    """ok; degraded (200) when an optional piece (the read replica, the
    keyword cluster's redundancy) is lost or behind; 503 down naming the
    engine that does not answer (the supervisor restarts it; clients retry).
    The rule is groundwork.services.health's."""
    report = platform_health(platform)
    body: dict[str, object] = {
        "status": report.status,
        "engines": report.engines,
        "replica": report.replica,
        "keyword_cluster": report.keyword_cluster,
        # this process's rate buckets: requests admitted and refused (429)
        "rate_limits": request.app.state.rate_limiter.summary(),
    }
    if report.status != "down":
        return body
    return JSONResponse(
        status_code=503,
        content={
            "error": "degraded",
            "message": "an engine is not answering; it is being restarted",
            **body,
        },
        headers={"Retry-After": "5"},
    )
