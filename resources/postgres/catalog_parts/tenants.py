"""Tenants and API keys."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Sequence

from groundwork.catalog import (
    Tenant,
)
from groundwork.ports import DEFAULT_KEY_SCOPES, Principal
from resources.postgres.catalog_parts.common import StoreBase, hash_secret
from resources.postgres.database import translated_errors


class TenantsAndKeys(StoreBase):
    # tenants and keys -------------------------------------------------------------
    def ensure_tenant(self, tenant_id: str, display_name: str, active_model: str) -> Tenant:
        with translated_errors("creating a tenant"), self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO tenants (tenant_id, display_name, active_model) VALUES (%s, %s, %s) "
                "ON CONFLICT (tenant_id) DO NOTHING",
                (tenant_id, display_name, active_model),
            )
        tenant = self.get_tenant(tenant_id)
        assert tenant is not None
        return tenant

    def get_tenant(self, tenant_id: str) -> Tenant | None:
        with translated_errors("reading a tenant"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT tenant_id, display_name, active_model FROM tenants WHERE tenant_id = %s",
                (tenant_id,),
            ).fetchone()
        return Tenant(*row) if row else None

    def list_tenants(self) -> list[Tenant]:
        with translated_errors("listing tenants"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT tenant_id, display_name, active_model FROM tenants ORDER BY tenant_id"
            ).fetchall()
        return [Tenant(*r) for r in rows]

    def create_api_key(
        self,
        tenant_id: str,
        subjects: Sequence[str],
        label: str,
        scopes: Sequence[str] = DEFAULT_KEY_SCOPES,
    ) -> tuple[str, str]:
        key_id = f"key_{uuid.uuid4().hex[:16]}"
        secret = f"gw_{secrets.token_urlsafe(32)}"
        with translated_errors("creating an API key"), self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO api_keys (key_id, tenant_id, key_hash, subjects, label, scopes) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                (key_id, tenant_id, hash_secret(secret), list(subjects), label, list(scopes)),
            )
        return key_id, secret

    def principal_for_key(self, secret: str) -> Principal | None:
        with translated_errors("authenticating"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT key_id, tenant_id, subjects, scopes FROM api_keys "
                "WHERE key_hash = %s AND revoked_at IS NULL",
                (hash_secret(secret),),
            ).fetchone()
        if row is None:
            return None
        return Principal(
            tenant_id=row[1], subjects=tuple(row[2]), key_id=row[0], scopes=tuple(row[3])
        )
