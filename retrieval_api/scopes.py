"""Which application operation each HTTP route is: a mapping, nothing more.
The scope each operation needs, and the refusal, live in
groundwork.services.scopes; a route missing from this table is refused
(default deny), and a test walks the OpenAPI document against it."""

from __future__ import annotations

from fastapi import Request

from groundwork.errors import Forbidden
from groundwork.services.scopes import require
from retrieval_api.deps import principal_from_request

#: a tool call: the key is authenticated here and the tool's own scope (from the
#: registry) is checked by the dispatcher, so a key holding only artifacts:write
#: can still call the artifact tools
TOOL_CALL = "tools.call"

#: (method, path template) -> operation; None: no key (the route authenticates otherwise)
ROUTE_OPERATIONS: dict[tuple[str, str], str | None] = {
    ("GET", "/v1/health"): None,
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
    ("POST", "/v1/uploads/{upload_id}/complete"): "uploads",
    ("POST", "/v1/pdf/merge"): "documents.compose",
    ("POST", "/v1/pdf/split"): "documents.compose",
    ("POST", "/v1/pdf/watermark"): "documents.compose",
    ("POST", "/v1/convert"): "documents.compose",
    ("POST", "/v1/artifacts"): "artifacts.write",
    ("GET", "/v1/artifacts"): "artifacts.read",
    ("GET", "/v1/artifacts/{artifact_id}"): "artifacts.read",
    ("POST", "/v1/artifacts/{artifact_id}/revise"): "artifacts.write",
    ("POST", "/v1/artifacts/{artifact_id}/approve"): "artifacts.approve",
    ("GET", "/v1/artifacts/{artifact_id}/history"): "artifacts.read",
    ("POST", "/v1/artifacts/{artifact_id}/restore"): "artifacts.write",
    ("POST", "/v1/artifacts/{artifact_id}/exports"): "artifacts.write",
    ("GET", "/v1/artifacts/{artifact_id}/download"): "artifacts.read",
    ("GET", "/v1/artifact-files/{file_id}"): "artifacts.read",
    ("DELETE", "/v1/artifacts/{artifact_id}"): "artifacts.delete",
    ("GET", "/v1/tools"): "tools.list",
    # authenticated here; each tool's own scope is checked by the tool dispatcher
    ("POST", "/v1/tools/{name}"): TOOL_CALL,
}


def enforce_route_scope(request: Request) -> None:
    """App-wide dependency: authenticate and check the route's scope before the
    handler runs (the principal is cached on the request for the handler)."""
    route = request.scope.get("route")
    key = (request.method, getattr(route, "path", ""))
    if key not in ROUTE_OPERATIONS:
        raise Forbidden(
            f"{key[0]} {key[1]} is not assigned an operation",
            "report this: every route must be listed in retrieval_api/scopes.py",
        )
    operation = ROUTE_OPERATIONS[key]
    if operation is None:
        return
    who = principal_from_request(request)
    if operation != TOOL_CALL:
        require(who, operation)
