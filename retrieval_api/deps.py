"""Request dependencies: the platform and the authenticated principal.

The principal comes from the API key only; tenant and subjects are never
request parameters, so a caller cannot widen its own scope. The platform is
known here by the ports it offers (`ServedPlatform`), never by its adapters:
the composition root (resources.composition.platform) is handed in by
retrieval_api.main.
"""

from typing import Annotated, Protocol

from fastapi import Depends, Header, Request
from fastapi.concurrency import run_in_threadpool

from groundwork.catalog import Tenant
from groundwork.ports import Principal
from groundwork.services.connectors import ConnectorPorts
from groundwork.services.health import HealthProbes
from groundwork.services.platform import PlatformPorts, WalledPlatform
from groundwork.tools.dispatch import ToolDispatcher


class ServedPlatform(WalledPlatform, HealthProbes, Protocol):
    """What serving HTTP asks of the whole platform: the ports, tenant views
    behind the tenant wall, and the health probes."""

    def known_tenant_view(self, tenant_id: str) -> PlatformPorts | None:
        """The tenant's view if made already (building one may touch the database)."""
        ...

    def operator_token(self) -> str | None:
        """The operator's bearer token for GET /metrics; None: metrics are off."""
        ...


class Unauthorized(Exception):
    pass


def get_platform(request: Request) -> ServedPlatform:
    """The whole platform: only for authentication and routes without a principal."""
    platform: ServedPlatform = request.app.state.platform_factory()
    return platform


def principal_from_request(request: Request) -> Principal:
    """Resolved once per request and cached: the route-scope check and the
    handler share the same principal (and one key lookup)."""
    cached = getattr(request.state, "principal", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    secret = request.headers.get("x-api-key")
    authorization = request.headers.get("authorization")
    if authorization and authorization.lower().startswith("bearer "):
        secret = authorization[7:].strip()
    if not secret:
        raise Unauthorized("send an API key as 'Authorization: Bearer <key>' or 'X-API-Key'")
    found = get_platform(request).catalog.authenticate(secret)
    if found is None:
        raise Unauthorized("the API key is not valid or has been revoked")
    request.state.principal = found.principal
    request.state.tenant = found.tenant
    return found.principal


async def get_principal(
    request: Request,
    authorization: Annotated[str | None, Header()] = None,
    x_api_key: Annotated[str | None, Header()] = None,
) -> Principal:
    """(The header parameters document the two ways to send a key in OpenAPI.)
    Async: the route-scope dependency has authenticated already, so this is a
    lookup on the request and costs no hop to a worker thread; only a route
    without that check reads the key, in a thread."""
    cached = getattr(request.state, "principal", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    return await run_in_threadpool(principal_from_request, request)


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def caller_tenant(request: Request) -> Tenant | None:
    """The caller's tenant as its key's read found it, this request (its model
    and fusion constants for a search); stored beside the principal by
    `principal_from_request`. None where the key was not read here."""
    tenant: Tenant | None = getattr(request.state, "tenant", None)
    return tenant


async def get_tenant_platform(request: Request, who: PrincipalDep) -> PlatformPorts:
    """The platform behind the caller's tenant wall (row-level security): a
    handler that forgot a tenant filter still cannot touch another tenant.
    The view is made once per tenant (in a thread: it may touch the database)."""
    platform = get_platform(request)
    view = platform.known_tenant_view(who.tenant_id)
    if view is None:
        view = await run_in_threadpool(platform.for_tenant, who.tenant_id)
    return view


PlatformDep = Annotated[PlatformPorts, Depends(get_tenant_platform)]


def get_connector_ports(request: Request, platform: PlatformDep) -> ConnectorPorts:
    """The connector services' ports behind the caller's tenant wall (built
    by the app, which knows the composition root; this module does not)."""
    ports: ConnectorPorts = request.app.state.connector_ports(platform)
    return ports


ConnectorPortsDep = Annotated[ConnectorPorts, Depends(get_connector_ports)]
WholePlatformDep = Annotated[ServedPlatform, Depends(get_platform)]


def tool_dispatcher(request: Request) -> ToolDispatcher:
    """The process's tool dispatcher (one per app): its drill-down turn ledger
    also counts /v1/chunks, so the two transports share one cap per key."""
    dispatcher: ToolDispatcher | None = getattr(request.app.state, "tool_dispatcher", None)
    if dispatcher is None:
        dispatcher = ToolDispatcher(request.app.state.platform_factory)
        request.app.state.tool_dispatcher = dispatcher
    return dispatcher
