"""Connections behind the row-level-security wall of one tenant.

The application filters every query by tenant already; this is the second
wall under it (migration 0009). A connection checked out here runs as the
role `groundwork_request` with `groundwork.tenant_id` set, so a query that
forgot its tenant filter still reads and writes only that tenant's rows (and
reads the shared system corpus's while `groundwork.system_corpus` is on,
migration 0031; it never writes them).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from groundwork.ports import SYSTEM_TENANT

REQUEST_ROLE = "groundwork_request"


class ConnectionSource(Protocol):
    """What the Postgres adapters need from a pool: a connection to borrow."""

    def connection(
        self, timeout: float | None = None
    ) -> AbstractContextManager[psycopg.Connection]: ...


class TenantWalledPool:
    """Borrows from a shared pool and puts the wall up for one tenant."""

    def __init__(self, pool: ConnectionPool, tenant_id: str) -> None:
        if not tenant_id:
            raise ValueError("a walled connection needs a tenant")
        self._pool = pool
        self.tenant_id = tenant_id

    @contextmanager
    def connection(
        self,
        timeout: float | None = None,
        settings: tuple[sql.Composable, Sequence[object]] | None = None,
    ) -> Iterator[psycopg.Connection]:
        """`settings`: more of the select list of the wall's statement (with
        its parameters), for transaction-local settings a checkout's first
        query needs: they go up with the wall, one round trip fewer (the
        vector search's hnsw settings, on every search)."""
        with self._pool.connection(timeout=timeout) as conn:
            if conn.autocommit:
                raise RuntimeError("a walled connection needs a transaction to hold its wall")
            # Transaction-local settings: the pool ends the checkout's transaction
            # (commit, or rollback after an error) and that takes the wall down with
            # it, so no statements are spent on teardown (two round trips fewer per
            # checkout on the search path). Adapters never commit inside a checkout
            # (nested `conn.transaction()` blocks are savepoints, which keep it);
            # tests/e2e/test_tenant_wall.py holds both facts.
            # (psycopg's pipeline mode would send BEGIN and this together, but it
            # costs more CPU and wall time than the extra round trip: 116 vs 76 us
            # CPU per checkout, measured)
            # The tenant's switch for the shared system corpus goes up with the wall
            # (migration 0031's read policy compares it per row, so it must be a
            # setting, not a lookup), read from the tenants row in the same
            # statement, first and as the owner: a flip holds from the next checkout.
            wall: sql.SQL | sql.Composed = sql.SQL(
                "SELECT set_config('groundwork.system_corpus', coalesce((SELECT 'on' FROM "
                "tenants WHERE tenant_id = %s AND system_corpus AND tenant_id <> %s), 'off'), "
                "true), set_config('role', %s, true), set_config('groundwork.tenant_id', %s, true)"
            )
            params: list[object] = [self.tenant_id, SYSTEM_TENANT, REQUEST_ROLE, self.tenant_id]
            if settings is not None:
                wall = sql.SQL("{}, {}").format(wall, settings[0])
                params += settings[1]
            conn.execute(wall, params)
            yield conn
