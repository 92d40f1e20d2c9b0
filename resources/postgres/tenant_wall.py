"""Connections behind the row-level-security wall of one tenant.

The application filters every query by tenant already; this is the second
wall under it (migration 0009). A connection checked out here runs as the
role `groundwork_request` with `groundwork.tenant_id` set, so a query that
forgot its tenant filter still reads and writes only that tenant's rows (and
reads the shared system corpus's while `groundwork.system_corpus` is on,
migration 0031; it never writes them).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from groundwork.ports import SYSTEM_TENANT

REQUEST_ROLE = "groundwork_request"

Settings = tuple[sql.Composable, Sequence[object]]


@dataclass
class _Shared:
    """The checkouts of one `shared_transaction` block: per pool and tenant, the
    connection it holds (returned to its pool when the block ends)."""

    thread: int
    held: ExitStack = field(default_factory=ExitStack)
    connections: dict[tuple[int, str], psycopg.Connection] = field(default_factory=dict)


_SHARED: ContextVar[_Shared | None] = ContextVar("groundwork_shared_transaction", default=None)


@contextmanager
def shared_transaction() -> Iterator[None]:
    """Walled checkouts made in this block, on this thread, share one connection
    and one transaction per pool and tenant: the wall goes up once and one
    commit ends it when the block does (rolled back if the block raises).

    A search checked out three times after its key's lookup (the vector leg,
    the re-check, the citations), each the pool's BEGIN, the wall, the
    statement and a COMMIT: 12 round trips where 6 carry the same work. Each
    statement still reads its own snapshot (READ COMMITTED), so the re-check
    sees a deletion or a permission change committed after the vector leg ran,
    as before. Another thread (the keyword leg's) checks out on its own: a
    connection serves one thread at a time. Nested blocks are the outer one."""
    if _SHARED.get() is not None:
        yield
        return
    shared = _Shared(threading.get_ident())
    token = _SHARED.set(shared)
    try:
        with shared.held:
            yield
    finally:
        _SHARED.reset(token)


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
        settings: Settings | None = None,
    ) -> Iterator[psycopg.Connection]:
        """`settings`: more of the select list of the wall's statement (with
        its parameters), for transaction-local settings a checkout's first
        query needs: they go up with the wall, one round trip fewer (the
        vector search's hnsw settings, on every search). Inside a
        `shared_transaction` the block's connection is lent instead, its wall
        already up (the settings then in a statement of their own)."""
        shared = _SHARED.get()
        if shared is None or shared.thread != threading.get_ident():
            with self._pool.connection(timeout=timeout) as own:
                self._raise_wall(own, settings)
                yield own
            return
        key = (id(self._pool), self.tenant_id)
        conn: psycopg.Connection | None = shared.connections.get(key)
        try:
            if conn is None:
                conn = shared.held.enter_context(self._pool.connection(timeout=timeout))
                shared.connections[key] = conn
                self._raise_wall(conn, settings)
            elif conn.info.transaction_status != psycopg.pq.TransactionStatus.INTRANS:
                # the transaction that held the wall is over (a use before this
                # one raised and was rolled back below): a new one, a new wall
                self._raise_wall(conn, settings)
            elif settings is not None:
                conn.execute(sql.SQL("SELECT {}").format(settings[0]), settings[1])
            yield conn
        except BaseException:
            # the shared transaction may be aborted: end it now, so the block's
            # next checkout starts a new one (and puts the wall up again)
            if conn is not None:
                with suppress(psycopg.Error):
                    conn.rollback()  # owner-only: the wall is transaction-local and falls with it
            raise

    def _raise_wall(self, conn: psycopg.Connection, settings: Settings | None) -> None:
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
