"""Tenants and API keys."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Sequence
from typing import Any

from psycopg.types.json import Jsonb

from groundwork.catalog import (
    NO_LIMITS,
    ApiKeyInfo,
    Authenticated,
    StorageUsage,
    Tenant,
    TenantLimits,
)
from groundwork.ports import DEFAULT_KEY_SCOPES, SYSTEM_TENANT, Principal
from groundwork.retrieval.kernel import FusionConstants
from resources.postgres.catalog_parts.common import StoreBase, hash_secret
from resources.postgres.database import outside_a_transaction, translated_errors

#: a tenant's limits, in TenantLimits' field order (migration 0028)
LIMIT_FIELDS = (
    "requests_per_second",
    "burst",
    "key_requests_per_second",
    "key_burst",
    "max_documents",
    "max_bytes",
)
#: whether the system corpus holds a live document now (Tenant's field says why)
SYSTEM_CORPUS_HOLDS = (
    f"EXISTS (SELECT 1 FROM sources WHERE tenant_id = '{SYSTEM_TENANT}' AND state = 'active')"
)
#: then whether it reads the system corpus (migration 0031), and whether that holds anything
SETTING_COLUMNS = ", ".join([*LIMIT_FIELDS, "system_corpus", SYSTEM_CORPUS_HOLDS])
T_SETTING_COLUMNS = ", ".join(
    [*(f"t.{c}" for c in [*LIMIT_FIELDS, "system_corpus"]), SYSTEM_CORPUS_HOLDS]
)


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
                f"SELECT tenant_id, display_name, active_model, fusion, {SETTING_COLUMNS} "
                "FROM tenants WHERE tenant_id = %s",
                (tenant_id,),
            ).fetchone()
        return _tenant(row) if row else None

    def list_tenants(self) -> list[Tenant]:
        with translated_errors("listing tenants"), self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT tenant_id, display_name, active_model, fusion, {SETTING_COLUMNS} "
                "FROM tenants ORDER BY tenant_id"
            ).fetchall()
        return [_tenant(r) for r in rows]

    def set_fusion(self, tenant_id: str, fusion: FusionConstants | None) -> bool:
        value = Jsonb(fusion.validated().to_dict()) if fusion is not None else None
        with translated_errors("setting fusion constants"), self.pool.connection() as conn:
            changed = conn.execute(
                "UPDATE tenants SET fusion = %s WHERE tenant_id = %s", (value, tenant_id)
            ).rowcount
        return changed == 1

    def set_system_corpus(self, tenant_id: str, enabled: bool) -> bool:
        with translated_errors("setting a tenant's system corpus"), self.pool.connection() as conn:
            changed = conn.execute(
                "UPDATE tenants SET system_corpus = %s WHERE tenant_id = %s", (enabled, tenant_id)
            ).rowcount
        return changed == 1

    def set_tenant_limits(self, tenant_id: str, limits: TenantLimits) -> bool:
        with translated_errors("setting a tenant's limits"), self.pool.connection() as conn:
            changed = conn.execute(
                "UPDATE tenants SET "
                + ", ".join(f"{c} = %s" for c in LIMIT_FIELDS)
                + " WHERE tenant_id = %s",
                (*(getattr(limits, c) for c in LIMIT_FIELDS), tenant_id),
            ).rowcount
        return changed == 1

    def storage_usage(self, tenant_id: str, origin: str | None = None) -> StorageUsage:
        """Live sources and the bytes of their kept versions (pending, stored,
        quarantined): what a quota counts. A deleted source frees its share at
        once, before the sweep removes its bytes."""
        with translated_errors("reading a tenant's storage use"), self.pool.connection() as conn:
            row = conn.execute(
                """
                SELECT (SELECT count(*) FROM sources
                         WHERE tenant_id = %(t)s AND state = 'active'),
                       (SELECT coalesce(sum(v.size_bytes), 0) FROM source_versions v
                          JOIN sources s USING (source_id)
                         WHERE v.tenant_id = %(t)s AND s.state = 'active'
                           AND v.state IN ('pending', 'stored', 'quarantined')),
                       EXISTS (SELECT 1 FROM sources
                                WHERE tenant_id = %(t)s AND origin = %(o)s AND state = 'active')
                """,
                {"t": tenant_id, "o": origin},
            ).fetchone()
        assert row is not None
        return StorageUsage(int(row[0]), int(row[1]), bool(row[2]))

    def count_drilldown(
        self, tenant_id: str, key_id: str, turn: str, cap: int, window_seconds: int
    ) -> int | None:
        # One statement: the row lock ON CONFLICT takes makes concurrent calls of
        # one turn wait for each other, so the cap holds across processes. The
        # key's windows that ended are dropped on the way (its rows stay few).
        with translated_errors("counting a drill-down call"), self.pool.connection() as conn:
            row = conn.execute(
                """
                WITH ended AS (
                    DELETE FROM drilldown_turns
                     WHERE key_id = %(key)s AND turn <> %(turn)s
                       AND started_at < now() - make_interval(secs => %(window)s)
                )
                INSERT INTO drilldown_turns AS d (tenant_id, key_id, turn, calls)
                VALUES (%(tenant)s, %(key)s, %(turn)s, 1)
                ON CONFLICT (key_id, turn) DO UPDATE SET
                    calls = CASE WHEN d.started_at < now() - make_interval(secs => %(window)s)
                                 THEN 1 ELSE d.calls + 1 END,
                    started_at = CASE WHEN d.started_at < now() - make_interval(secs => %(window)s)
                                      THEN now() ELSE d.started_at END
                 WHERE d.calls < %(cap)s
                    OR d.started_at < now() - make_interval(secs => %(window)s)
                RETURNING calls
                """,
                {
                    "tenant": tenant_id,
                    "key": key_id,
                    "turn": turn,
                    "cap": cap,
                    "window": window_seconds,
                },
            ).fetchone()
        return int(row[0]) if row else None

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
        found = self.authenticate(secret)
        return found.principal if found is not None else None

    def authenticate(self, secret: str) -> Authenticated | None:
        """Read outside a transaction: every request looks its key up, and BEGIN
        and COMMIT were two of the lookup's three round trips. The tenant comes
        in the same statement: read apart, behind the tenant wall, it cost a
        search four more round trips (0.2-0.3 ms of the API's CPU at 8 clients,
        bench/search_profile.py). It is not carried on the principal, which may
        be held longer than one request (a test, a script)."""
        with (
            translated_errors("authenticating"),
            self.pool.connection() as pooled,
            outside_a_transaction(pooled) as conn,
        ):
            row = conn.execute(
                "SELECT k.key_id, k.subjects, k.scopes, t.tenant_id, t.display_name, "
                f"t.active_model, t.fusion, {T_SETTING_COLUMNS} "
                "FROM api_keys k JOIN tenants t USING (tenant_id) "
                "WHERE k.key_hash = %s AND k.revoked_at IS NULL",
                (hash_secret(secret),),
            ).fetchone()
        if row is None:
            return None
        tenant = _tenant(row[3:])
        principal = Principal(
            tenant_id=tenant.tenant_id, subjects=tuple(row[1]), key_id=row[0], scopes=tuple(row[2])
        )
        return Authenticated(principal, tenant)

    def list_api_keys(self, tenant_id: str) -> list[ApiKeyInfo]:
        # key_hash is deliberately not selected: it never leaves the database
        with translated_errors("listing API keys"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT key_id, tenant_id, label, subjects, scopes, created_at, revoked_at "
                "FROM api_keys WHERE tenant_id = %s ORDER BY created_at, key_id",
                (tenant_id,),
            ).fetchall()
        return [
            ApiKeyInfo(
                key_id=r[0],
                tenant_id=r[1],
                label=r[2],
                subjects=tuple(r[3]),
                scopes=tuple(r[4]),
                created_at=r[5],
                revoked_at=r[6],
            )
            for r in rows
        ]

    def revoke_api_key(self, tenant_id: str, key_id: str) -> bool:
        # principal_for_key reads the row on every request (no cache), so the
        # revocation holds from the next request on; the ids the key was handed
        # can never be drilled into again and go in the same statement
        # (issued_chunks names the key alone: no cascade reaches it)
        with translated_errors("revoking an API key"), self.pool.connection() as conn:
            row = conn.execute(
                "WITH revoked AS (UPDATE api_keys SET revoked_at = now() "
                "WHERE tenant_id = %s AND key_id = %s AND revoked_at IS NULL RETURNING key_id), "
                "gone AS (DELETE FROM issued_chunks WHERE key_id IN (SELECT key_id FROM revoked)) "
                "SELECT 1 FROM revoked",
                (tenant_id, key_id),
            ).fetchone()
        return row is not None

    def rotate_api_key(self, tenant_id: str, key_id: str) -> tuple[str, str] | None:
        new_id = f"key_{uuid.uuid4().hex[:16]}"
        secret = f"gw_{secrets.token_urlsafe(32)}"
        with translated_errors("rotating an API key"), self.pool.connection() as conn:
            with conn.transaction():
                old = conn.execute(
                    "UPDATE api_keys SET revoked_at = now() "
                    "WHERE tenant_id = %s AND key_id = %s AND revoked_at IS NULL "
                    "RETURNING subjects, label, scopes",
                    (tenant_id, key_id),
                ).fetchone()
                if old is None:
                    return None
                # the old key's handed ids die with it (see revoke_api_key)
                conn.execute("DELETE FROM issued_chunks WHERE key_id = %s", (key_id,))
                conn.execute(
                    "INSERT INTO api_keys (key_id, tenant_id, key_hash, subjects, label, scopes) "
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    (new_id, tenant_id, hash_secret(secret), old[0], old[1], old[2]),
                )
        return new_id, secret


def _tenant(row: Sequence[Any]) -> Tenant:
    """(tenant_id, display_name, active_model, fusion, *LIMIT_FIELDS, system_corpus,
    the system corpus holds a document)"""
    fusion = FusionConstants.from_dict(row[3]) if row[3] else None
    limits = TenantLimits(*row[4 : 4 + len(LIMIT_FIELDS)]) if len(row) > 4 else NO_LIMITS
    settings = row[4 + len(LIMIT_FIELDS) :]
    system_corpus = bool(settings[0]) if settings else True
    holds = bool(settings[1]) if len(settings) > 1 else True
    return Tenant(row[0], row[1], row[2], fusion, limits, system_corpus, holds)
