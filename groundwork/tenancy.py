"""Tenants, their API keys, limits and usage: the tenant directory part of the
catalog port (`groundwork.catalog` re-exports every name here).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from groundwork.ports import DEFAULT_KEY_SCOPES, Principal
from groundwork.retrieval.kernel import FusionConstants


@dataclass(frozen=True, slots=True)
class TenantLimits:
    """What one tenant may use; None is no limit (the default). Rates are token
    buckets: `requests_per_second` refills the tenant's bucket of `burst`
    (every key of the tenant draws from it), `key_requests_per_second` and
    `key_burst` each key's own. Quotas: live documents and stored bytes."""

    requests_per_second: float | None = None
    burst: int | None = None
    key_requests_per_second: float | None = None
    key_burst: int | None = None
    max_documents: int | None = None
    max_bytes: int | None = None

    @property
    def rated(self) -> bool:
        return self.requests_per_second is not None or self.key_requests_per_second is not None

    @property
    def quota(self) -> bool:
        return self.max_documents is not None or self.max_bytes is not None


NO_LIMITS = TenantLimits()


@dataclass(frozen=True, slots=True)
class StorageUsage:
    """A tenant's live documents (sources not deleted) and the bytes of their
    stored versions; `has_origin`: a live source already has the origin asked
    about (a new version of it is no new document)."""

    documents: int
    bytes: int
    has_origin: bool = False


@dataclass(frozen=True, slots=True)
class Tenant:
    tenant_id: str
    display_name: str
    active_model: str
    #: its own fusion constants (adopted by the eval out of fold), else the defaults
    fusion: FusionConstants | None = None
    #: its rate limits and quotas (none unless an operator set them)
    limits: TenantLimits = NO_LIMITS
    #: it reads the shared system corpus beside its own (the default; an
    #: operator can turn it off, groundwork.services.tenant_wall)
    system_corpus: bool = True
    #: the system corpus held a live document when this row was read (not the
    #: tenant's setting: the catalog reads it with the row). An empty one is
    #: not searched: every tenant reads it by default and most homes never
    #: fill it, so each search planned and ran a leg arm that found nothing.
    system_corpus_holds_documents: bool = True


@dataclass(frozen=True, slots=True)
class Authenticated:
    """A key's principal and its tenant, read together for one request. The
    tenant's serving settings (model, fusion constants) are not carried on the
    principal: a principal held longer than a request would serve stale ones."""

    principal: Principal
    tenant: Tenant


#: A tenant id is also an inbox folder name and a Dagster partition key.
TENANT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


@dataclass(frozen=True, slots=True)
class ApiKeyInfo:
    """What an operator may see of a key: never its secret nor the secret's hash."""

    key_id: str
    tenant_id: str
    label: str
    subjects: tuple[str, ...]
    scopes: tuple[str, ...]
    created_at: datetime
    revoked_at: datetime | None


@runtime_checkable
class TenantDirectory(Protocol):
    """Tenants and API keys: who exists and who is asking (a key's secret is
    stored only as a hash)."""

    def ensure_tenant(self, tenant_id: str, display_name: str, active_model: str) -> Tenant: ...

    def get_tenant(self, tenant_id: str) -> Tenant | None: ...

    def list_tenants(self) -> list[Tenant]: ...

    def create_api_key(
        self,
        tenant_id: str,
        subjects: Sequence[str],
        label: str,
        scopes: Sequence[str] = DEFAULT_KEY_SCOPES,
    ) -> tuple[str, str]:
        """Return (key_id, secret). Only a hash of the secret is stored."""
        ...

    def principal_for_key(self, secret: str) -> Principal | None:
        """The key's principal; None for an unknown or revoked key."""
        ...

    def authenticate(self, secret: str) -> Authenticated | None:
        """The key's principal with its tenant as it is now, in one read (a
        search needs both: the tenant names the model and the fusion
        constants); None for an unknown or revoked key."""
        ...

    def list_api_keys(self, tenant_id: str) -> list[ApiKeyInfo]: ...

    def revoke_api_key(self, tenant_id: str, key_id: str) -> bool:
        """Revoke at once (the next authentication fails); False when the tenant
        has no such active key."""
        ...

    def set_fusion(self, tenant_id: str, fusion: FusionConstants | None) -> bool:
        """The tenant's own fusion constants (None: back to the defaults); False
        for an unknown tenant."""
        ...

    def set_system_corpus(self, tenant_id: str, enabled: bool) -> bool:
        """Whether the tenant reads the shared system corpus (the row wall reads
        the same setting); False for an unknown tenant."""
        ...

    def rotate_api_key(self, tenant_id: str, key_id: str) -> tuple[str, str] | None:
        """Revoke the key and create one with its subjects, scopes and label in
        one transaction; return (key_id, secret) of the new key, or None when the
        tenant has no such active key."""
        ...

    def count_drilldown(
        self, tenant_id: str, key_id: str, turn: str, cap: int, window_seconds: int
    ) -> int | None:
        """Count one drill-down call of the key in `turn` ("" is the key's own
        bucket) unless `cap` calls were counted in its window, which starts at
        the first call and lasts `window_seconds`; return the count with this
        call, or None at the cap. Atomic across processes: the HTTP workers and
        the MCP server share one count, so a turn's cap is one cap."""
        ...


class TenantQuotas(Protocol):
    """Where a tenant's limits are kept and what it uses against them."""

    def set_tenant_limits(self, tenant_id: str, limits: TenantLimits) -> bool:
        """Replace the tenant's limits; False for an unknown tenant."""
        ...

    def storage_usage(self, tenant_id: str, origin: str | None = None) -> StorageUsage: ...
