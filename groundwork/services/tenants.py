"""Tenants and API keys for operators: the rules once, for the CLI and any
future admin transport. A tenant id is a safe folder and partition name; a
key's subjects name who it acts as (`kind:value`) and its scopes are known
ones; a key is revoked or rotated only through its own tenant; a secret is
shown once, when it is issued."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from groundwork.catalog import TENANT_ID, ApiKeyInfo, Tenant, TenantDirectory
from groundwork.errors import Refused
from groundwork.ports import SYSTEM_TENANT
from groundwork.services.scopes import ALL_SCOPES, DEFAULT_KEY_SCOPES, Scope

SUBJECT = re.compile(r"^[a-z][a-z0-9_-]{0,31}:[^\s,]{1,200}$")
MAX_LABEL = 200
MAX_SUBJECTS = 64


@dataclass(frozen=True, slots=True)
class IssuedKey:
    key_id: str
    secret: str  # shown once; only its hash is stored
    tenant_id: str
    subjects: tuple[str, ...]
    scopes: tuple[str, ...]


def create_tenant(
    directory: TenantDirectory, tenant_id: str, display_name: str, model_key: str
) -> Tenant:
    if tenant_id == SYSTEM_TENANT:
        # its documents are read by every tenant: never an ordinary tenant's
        raise Refused(
            f"{SYSTEM_TENANT!r} is reserved for the shared system corpus",
            "choose another id; the system corpus is made with groundwork tenant create-system",
            code="reserved",
        )
    if not TENANT_ID.match(tenant_id):
        raise Refused(
            f"{tenant_id!r} is not a tenant id",
            "use 1-63 lower-case letters, digits, '-' or '_', starting with a letter or digit",
            code="invalid",
        )
    return directory.ensure_tenant(tenant_id, display_name[:MAX_LABEL] or tenant_id, model_key)


def create_system_tenant(directory: TenantDirectory, model_key: str) -> Tenant:
    """The owner of the shared system corpus (idempotent). Its documents go
    through the same pipeline as any tenant's; its keys write only with
    system:admin (groundwork.services.scopes)."""
    return directory.ensure_tenant(SYSTEM_TENANT, "system corpus", model_key)


def _existing(directory: TenantDirectory, tenant_id: str) -> Tenant:
    tenant = directory.get_tenant(tenant_id)
    if tenant is None:
        raise Refused(
            f"no tenant {tenant_id}",
            "create it first (groundwork tenant create)",
            code="not_found",
        )
    return tenant


def issue_key(
    directory: TenantDirectory,
    tenant_id: str,
    subjects: Sequence[str] | None,
    label: str,
    scopes: Sequence[str] | None,
) -> IssuedKey:
    """Subjects default to the whole tenant, scopes to read and write."""
    _existing(directory, tenant_id)
    chosen = tuple(dict.fromkeys(subjects or [f"tenant:{tenant_id}"]))
    bad = [s for s in chosen if not SUBJECT.match(s)]
    if bad or len(chosen) > MAX_SUBJECTS:
        raise Refused(
            f"not subjects: {', '.join(bad) or f'more than {MAX_SUBJECTS}'}",
            "name each as kind:value, e.g. group:finance or user:ann",
            code="invalid",
        )
    granted = tuple(dict.fromkeys(scopes or DEFAULT_KEY_SCOPES))
    unknown = [s for s in granted if s not in ALL_SCOPES]
    if unknown:
        raise Refused(
            f"unknown scopes: {', '.join(unknown)}",
            f"choose from {', '.join(ALL_SCOPES)}",
            code="invalid",
        )
    if Scope.SYSTEM in granted and tenant_id != SYSTEM_TENANT:
        raise Refused(
            f"{Scope.SYSTEM.value} is only for keys of the {SYSTEM_TENANT} tenant",
            f"issue it on a key of {SYSTEM_TENANT} (groundwork key create {SYSTEM_TENANT} ...)",
            code="invalid",
        )
    if len(label) > MAX_LABEL:
        raise Refused(f"the label is over {MAX_LABEL} characters", "shorten it", code="invalid")
    key_id, secret = directory.create_api_key(tenant_id, chosen, label, granted)
    return IssuedKey(key_id, secret, tenant_id, chosen, granted)


def list_keys(directory: TenantDirectory, tenant_id: str) -> list[ApiKeyInfo]:
    _existing(directory, tenant_id)
    return directory.list_api_keys(tenant_id)


def _no_such_key(tenant_id: str, key_id: str) -> Refused:
    return Refused(
        f"{tenant_id} has no active key {key_id}",
        f"list the tenant's keys (groundwork key list {tenant_id})",
        code="not_found",
    )


def revoke_key(directory: TenantDirectory, tenant_id: str, key_id: str) -> None:
    """Holds from the next request: authentication reads the key every time."""
    _existing(directory, tenant_id)
    if not directory.revoke_api_key(tenant_id, key_id):
        raise _no_such_key(tenant_id, key_id)


def rotate_key(directory: TenantDirectory, tenant_id: str, key_id: str) -> IssuedKey:
    """Revoke and re-issue with the same subjects, scopes and label, in one step."""
    _existing(directory, tenant_id)
    before = {k.key_id: k for k in directory.list_api_keys(tenant_id)}.get(key_id)
    rotated = directory.rotate_api_key(tenant_id, key_id)
    if rotated is None or before is None:
        raise _no_such_key(tenant_id, key_id)
    return IssuedKey(rotated[0], rotated[1], tenant_id, before.subjects, before.scopes)
