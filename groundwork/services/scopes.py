"""What an API key may do, beyond whose files it sees: one table for every
route and tool, checked in one place (`require`).

Why separate delete and admin from write: a key that can add files should not
by that alone be able to remove them, and changing who may read a source
(re-scoping) can widen access, so it needs an administrator's scope. Approving
a destructive artifact edit is a scope of its own so that the proposer of an
edit cannot approve it with the same key.
"""

from __future__ import annotations

from enum import StrEnum

from groundwork.errors import Forbidden
from groundwork.ports import DEFAULT_KEY_SCOPES, SYSTEM_TENANT, Principal


class Scope(StrEnum):
    READ = "files:read"
    WRITE = "files:write"
    DELETE = "files:delete"
    ADMIN = "sources:admin"
    ARTIFACTS = "artifacts:write"
    APPROVE = "artifacts:approve"
    #: an operator's key: reads and sets any tenant's limits (issue it to an
    #: operators' tenant, never to a customer's; no key holds it by default)
    OPERATOR = "platform:admin"
    #: writes into the shared system corpus: a key of the reserved system
    #: tenant needs it beside the write scope itself, so an ordinary key of
    #: that tenant (or one issued by mistake) cannot change what every tenant
    #: reads; only the system tenant's keys may hold it (tenants.issue_key)
    SYSTEM = "system:admin"


ALL_SCOPES: tuple[str, ...] = tuple(s.value for s in Scope)
__all__ = ["ALL_SCOPES", "DEFAULT_KEY_SCOPES", "OPERATION_SCOPES", "Scope", "require"]

#: every operation a transport offers, by the name the transports map to
OPERATION_SCOPES: dict[str, Scope] = {
    # reading
    "search": Scope.READ,
    "context": Scope.READ,
    "summaries": Scope.READ,
    "chunks.read": Scope.READ,
    "citations.read": Scope.READ,
    "sources.status": Scope.READ,
    "sources.read": Scope.READ,
    "files.list": Scope.READ,
    "files.reference": Scope.READ,
    "artifacts.read": Scope.READ,
    "tools.list": Scope.READ,
    "limits.read": Scope.READ,
    # writing files
    "sources.register": Scope.WRITE,
    "sources.tags": Scope.WRITE,
    "uploads": Scope.WRITE,
    "documents.compose": Scope.WRITE,
    # removing and re-scoping
    "sources.delete": Scope.DELETE,
    "sources.subjects": Scope.ADMIN,
    # connected sources (their configuration, credentials by reference)
    "connectors.admin": Scope.ADMIN,
    # artifacts
    "artifacts.write": Scope.ARTIFACTS,
    "artifacts.delete": Scope.DELETE,
    "artifacts.approve": Scope.APPROVE,
    # operating the platform
    "tenants.limits": Scope.OPERATOR,
    "tenants.system_corpus": Scope.OPERATOR,
}

#: the scopes that only read: every other scope a system tenant key uses
#: changes the system corpus and needs system:admin too
READ_ONLY_SCOPES = frozenset({Scope.READ})


def scope_for(operation: str) -> Scope:
    try:
        return OPERATION_SCOPES[operation]
    except KeyError:
        # default deny: an operation nobody classified is refused, never open
        raise Forbidden(
            f"operation {operation!r} has no scope assigned",
            "report this: every operation must be listed in groundwork.services.scopes",
        ) from None


def require(who: Principal, operation: str) -> None:
    """Refuse unless the caller's key holds the scope `operation` needs."""
    needed = scope_for(operation)
    require_scope(who, needed.value, operation)
    if who.tenant_id == SYSTEM_TENANT and needed not in READ_ONLY_SCOPES:
        require_scope(who, Scope.SYSTEM.value, f"{operation} in the system corpus")


def require_scope(who: Principal, scope: str, operation: str) -> None:
    if scope not in who.scopes:
        raise Forbidden(
            f"{operation} needs the scope {scope}; this key has {', '.join(who.scopes) or 'none'}",
            f"ask an administrator for a key with that scope (groundwork key create ... --scope {scope})",
            {"needed_scope": scope},
        )
