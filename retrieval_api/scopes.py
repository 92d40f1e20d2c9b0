"""Which application operation each HTTP route is: a mapping, nothing more.
The scope each operation needs, and the refusal, live in
groundwork.services.scopes; a route missing from this table is refused
(default deny), and a test walks the OpenAPI document against it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import Request
from fastapi.concurrency import run_in_threadpool

from groundwork.errors import Forbidden
from groundwork.ports import Principal
from groundwork.services.limits import RateLimiter
from groundwork.services.scopes import require
from retrieval_api.deps import caller_tenant, principal_from_request

#: a tool call: the key is authenticated here and the tool's own scope (from the
#: registry) is checked by the dispatcher, so a key holding only artifacts:write
#: can still call the artifact tools
TOOL_CALL = "tools.call"

#: (method, path template) -> operation; None: no key (the route authenticates otherwise)
ROUTE_OPERATIONS: dict[tuple[str, str], str | None] = {
    ("GET", "/v1/health"): None,
    # the operator's view across tenants: its own bearer token, never a tenant's key
    ("GET", "/metrics"): None,
    # a signed, expiring reference is its own credential (bound to tenant, source, version)
    ("GET", "/v1/files/{token}"): None,
    ("POST", "/v1/search"): "search",
    ("POST", "/v1/context"): "context",
    ("GET", "/v1/summaries"): "summaries",
    ("GET", "/v1/chunks/{chunk_id}"): "chunks.read",
    ("GET", "/v1/citations/{citation_id}"): "citations.read",
    ("POST", "/v1/citations/resolve"): "citations.read",
    ("POST", "/v1/sources"): "sources.register",
    ("GET", "/v1/sources/{source_id}/status"): "sources.status",
    ("GET", "/v1/sources/{source_id}/read"): "sources.read",
    ("GET", "/v1/sources/{source_id}/tables"): "sources.read",
    ("DELETE", "/v1/sources/{source_id}"): "sources.delete",
    ("PUT", "/v1/sources/{source_id}/subjects"): "sources.subjects",
    ("PUT", "/v1/sources/{source_id}/tags"): "sources.tags",
    ("POST", "/v1/sources/{source_id}/reference"): "files.reference",
    ("GET", "/v1/files"): "files.list",
    ("GET", "/v1/sources/{source_id}/versions"): "files.list",
    ("POST", "/v1/uploads"): "uploads",
    ("GET", "/v1/uploads/{upload_id}"): "uploads",
    ("PUT", "/v1/uploads/{upload_id}"): "uploads",
    ("DELETE", "/v1/uploads/{upload_id}"): "uploads",
    ("POST", "/v1/uploads/{upload_id}/complete"): "uploads",
    ("POST", "/v1/pdf/merge"): "documents.compose",
    ("POST", "/v1/pdf/split"): "documents.compose",
    ("POST", "/v1/pdf/watermark"): "documents.compose",
    ("POST", "/v1/pdf/reorder"): "documents.compose",
    ("POST", "/v1/pdf/insert"): "documents.compose",
    ("POST", "/v1/pdf/rotate"): "documents.compose",
    ("POST", "/v1/convert"): "documents.compose",
    ("POST", "/v1/artifacts"): "artifacts.write",
    ("GET", "/v1/artifacts"): "artifacts.read",
    ("GET", "/v1/artifacts/{artifact_id}"): "artifacts.read",
    ("POST", "/v1/artifacts/{artifact_id}/revise"): "artifacts.write",
    ("POST", "/v1/artifacts/{artifact_id}/approve"): "artifacts.approve",
    ("GET", "/v1/artifacts/{artifact_id}/history"): "artifacts.read",
    ("POST", "/v1/artifacts/{artifact_id}/restore"): "artifacts.write",
    ("POST", "/v1/artifacts/{artifact_id}/index"): "artifacts.write",
    ("POST", "/v1/artifacts/{artifact_id}/exports"): "artifacts.write",
    ("GET", "/v1/artifacts/{artifact_id}/download"): "artifacts.read",
    ("GET", "/v1/artifact-files/{file_id}"): "artifacts.read",
    ("DELETE", "/v1/artifacts/{artifact_id}"): "artifacts.delete",
    ("GET", "/v1/tools"): "tools.list",
    ("GET", "/v1/limits"): "limits.read",
    ("GET", "/v1/admin/tenants/{tenant_id}/limits"): "tenants.limits",
    ("PUT", "/v1/admin/tenants/{tenant_id}/limits"): "tenants.limits",
    ("GET", "/v1/admin/tenants/{tenant_id}/system-corpus"): "tenants.system_corpus",
    ("PUT", "/v1/admin/tenants/{tenant_id}/system-corpus"): "tenants.system_corpus",
    ("POST", "/v1/connectors"): "connectors.admin",
    ("GET", "/v1/connectors"): "connectors.admin",
    ("GET", "/v1/connectors/{name}"): "connectors.admin",
    ("PUT", "/v1/connectors/{name}/paused"): "connectors.admin",
    ("DELETE", "/v1/connectors/{name}"): "connectors.admin",
    # authenticated here; each tool's own scope is checked by the tool dispatcher
    ("POST", "/v1/tools/{name}"): TOOL_CALL,
}


#: set on an endpoint that authorizes in its own worker thread (retrieval_api.threads)
_IN_ITS_THREAD = "_groundwork_authorizes_in_its_thread"

E = TypeVar("E", bound=Callable[..., Any])


def authorize_in_handler_thread(endpoint: E) -> E:
    """Marks an endpoint that calls `retrieval_api.threads.in_one_thread`: the key
    is looked up and the scope checked in the thread that then does the work, so
    the request hops to a worker thread once, not twice (one route-scope hop, one
    handler hop). Its body is validated first, as the request hygiene's checks
    are; nothing else runs before the refusal (tests/e2e/test_scopes.py)."""
    setattr(endpoint, _IN_ITS_THREAD, True)
    return endpoint


def authorizes_in_its_thread(route: object) -> bool:
    return bool(getattr(getattr(route, "endpoint", None), _IN_ITS_THREAD, False))


async def enforce_route_scope(request: Request) -> None:
    """App-wide dependency: the route's operation (default deny), then the key
    and the operation's scope in a worker thread, before the handler runs (the
    principal is cached on the request for the handler); a route that
    authorizes in its own thread does it there."""
    route = request.scope.get("route")
    key = (request.method, getattr(route, "path", ""))
    if key not in ROUTE_OPERATIONS:
        raise Forbidden(
            f"{key[0]} {key[1]} is not assigned an operation",
            "report this: every route must be listed in retrieval_api/scopes.py",
        )
    request.state.operation = ROUTE_OPERATIONS[key]
    if request.state.operation is None or authorizes_in_its_thread(route):
        return
    await run_in_threadpool(authorize, request)


def authorize(request: Request) -> Principal:
    """The caller's principal, its key checked and the route's scope required
    (blocking: a key lookup). Only for a route whose operation needs a key."""
    operation = getattr(request.state, "operation", None)
    if operation is None:
        raise RuntimeError("authorize() is for a route whose operation needs a key")
    who = principal_from_request(request)
    if operation != TOOL_CALL:
        require(who, operation)
    tenant = caller_tenant(request)
    if tenant is not None:  # once per request, for every route with a key (tools included)
        digest = getattr(request.state, "key_digest", None)  # retrieval_api.rate_refusal
        rate_limiter(request).admit(who, tenant.limits, digest)
    return who


def rate_limiter(request: Request) -> RateLimiter:
    """The serving process's rate buckets (one per app; groundwork.services.limits)."""
    limiter: RateLimiter | None = getattr(request.app.state, "rate_limiter", None)
    if limiter is None:
        limiter = request.app.state.rate_limiter = RateLimiter()
    return limiter
