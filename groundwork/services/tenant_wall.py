"""The tenant wall's rule for reading, once: a caller reads its own tenant's
documents under its key's subjects and, unless its tenant turned the shared
system corpus off, the system corpus's (owner in (tenant, system)); never
another tenant's. An empty system corpus is not read (nothing there to find,
and every leg would pay for it): the tenant row a request reads says whether
it holds a live document, so a system document counts from the next request.
Every search leg and every re-check takes the scope made here, so the rule is
this module's and the legs only apply it.

System documents are read under the subject `tenant:system` (what a system
tenant key gives the documents it registers, as any tenant's key does) and the
caller's own subjects: the system administrator can narrow a system document
to a subject some keys hold, in any tenant. Writing is the other half
(groundwork.services.scopes): only a system tenant key holding system:admin
writes there, and every other tenant's key is walled into its own tenant.

The row-level-security policy of migration 0031 is the second wall under this
one and reads the same switch from the tenants row.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from groundwork.catalog import Tenant, TenantDirectory
from groundwork.errors import Refused
from groundwork.ports import SYSTEM_TENANT, AccessScope, Principal, SystemReading

#: the subject every system document is readable under by default
SYSTEM_READERS = f"tenant:{SYSTEM_TENANT}"


def reading_scope(who: Principal, tenant: Tenant | None) -> AccessScope:
    """The scope `who`'s searches read with. `tenant`: the caller's tenant as
    this request read it (its switch); None (unknown) reads its own rows only."""
    own = who.scope
    if tenant is not None and tenant.tenant_id != who.tenant_id:
        raise ValueError("the tenant given is not the caller's")
    if who.tenant_id == SYSTEM_TENANT or not who.subjects:
        return own
    if tenant is None or not tenant.system_corpus or not tenant.system_corpus_holds_documents:
        return own
    subjects = tuple(dict.fromkeys((SYSTEM_READERS, *who.subjects)))
    return replace(own, system=SystemReading(SYSTEM_TENANT, subjects))


def caller_scope(directory: TenantDirectory, who: Principal) -> AccessScope:
    """`reading_scope` with the caller's tenant read now (for calls that did
    not read it at authentication)."""
    return reading_scope(who, directory.get_tenant(who.tenant_id))


class SwitchPorts(Protocol):
    """What the switch needs of the platform (transports pass theirs whole)."""

    @property
    def catalog(self) -> TenantDirectory: ...


def system_corpus_enabled(ports: SwitchPorts, tenant_id: str) -> bool:
    return _ordinary(ports.catalog, tenant_id).system_corpus


def set_system_corpus(ports: SwitchPorts, tenant_id: str, enabled: bool) -> bool:
    """Turn the tenant's reading of the system corpus on or off; it holds from
    the next request (each request reads its tenant's switch)."""
    _ordinary(ports.catalog, tenant_id)
    ports.catalog.set_system_corpus(tenant_id, enabled)
    return enabled


def _ordinary(directory: TenantDirectory, tenant_id: str) -> Tenant:
    if tenant_id == SYSTEM_TENANT:
        raise Refused(
            f"{SYSTEM_TENANT} owns the system corpus; it has no switch of its own",
            "set the switch of a tenant that reads it",
            code="invalid",
        )
    tenant = directory.get_tenant(tenant_id)
    if tenant is None:
        raise Refused(
            f"no tenant {tenant_id}", "create it first (groundwork tenant create)", code="not_found"
        )
    return tenant
