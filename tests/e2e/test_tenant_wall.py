"""The second wall: forced row-level security under the application's own
tenant filters. SQL that forgets its tenant filter, run on a walled
connection, still sees and writes only the walled tenant's rows."""

from __future__ import annotations

import contextvars
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest

from groundwork.stages.registration import register_file
from resources.composition.platform import Platform
from resources.postgres.database import outside_a_transaction
from resources.postgres.tenant_wall import TenantWalledPool, shared_transaction
from tests.e2e.helpers import assert_pool_unwalled


def _tenant_with_a_file(platform: Platform) -> str:
    tenant = f"w-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant,
        origin=f"api:{tenant}.txt",
        filename=f"{tenant}.txt",
        data=f"secret of {tenant}".encode(),
        subjects=[f"tenant:{tenant}"],
        media_type="text/plain",
    )
    return tenant


def test_an_unfiltered_query_sees_only_the_walled_tenant(platform: Platform) -> None:
    mine, theirs = _tenant_with_a_file(platform), _tenant_with_a_file(platform)
    walled = TenantWalledPool(platform.pool, mine)  # type: ignore[arg-type]
    with walled.connection() as conn:
        tenants = {row[0] for row in conn.execute("SELECT tenant_id FROM sources").fetchall()}
        assert tenants == {mine}
        assert conn.execute(
            "SELECT count(*) FROM source_versions WHERE tenant_id = %s", (theirs,)
        ).fetchone() == (0,)
        assert conn.execute(
            "SELECT count(*) FROM api_keys WHERE tenant_id = %s", (theirs,)
        ).fetchone() == (0,)
        changed = conn.execute(
            "UPDATE sources SET filename = 'stolen' WHERE tenant_id = %s", (theirs,)
        ).rowcount
        assert changed == 0
    # the owner (pipeline) connection still sees both, and nothing was changed
    with platform.pool.connection() as conn:
        names = conn.execute(
            "SELECT filename FROM sources WHERE tenant_id = %s", (theirs,)
        ).fetchall()
        assert names == [(f"{theirs}.txt",)]


def test_writing_another_tenants_row_is_refused(platform: Platform) -> None:
    mine, theirs = _tenant_with_a_file(platform), _tenant_with_a_file(platform)
    walled = TenantWalledPool(platform.pool, mine)  # type: ignore[arg-type]
    with pytest.raises(psycopg.errors.InsufficientPrivilege), walled.connection() as conn:
        conn.execute(
            "INSERT INTO sources (source_id, tenant_id, origin, filename, subjects) "
            "VALUES (%s, %s, 'api:x', 'x', '{a}')",
            (f"src_{uuid.uuid4().hex}", theirs),
        )


def test_the_wall_comes_down_when_the_connection_returns(platform: Platform) -> None:
    mine = _tenant_with_a_file(platform)
    walled = TenantWalledPool(platform.pool, mine)  # type: ignore[arg-type]
    with walled.connection() as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("groundwork_request",)
    with pytest.raises(psycopg.errors.InsufficientPrivilege), walled.connection() as conn:
        conn.execute(
            "INSERT INTO sources (source_id, tenant_id, origin, filename, subjects) "
            "VALUES ('x', 'nobody', 'o', 'f', '{a}')"
        )
    # after a clean return and after an error, pooled connections are the owner again
    assert_pool_unwalled(platform.pool)


def test_every_tenant_scoped_table_has_forced_row_level_security(platform: Platform) -> None:
    with platform.pool.connection() as conn:
        rows = conn.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity FROM pg_class c "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r'"
        ).fetchall()
    unwalled = [name for name, enabled, forced in rows if not (enabled and forced)]
    assert rows and unwalled == []


def test_the_wall_holds_through_savepoints(platform: Platform) -> None:
    """The wall is transaction-local: adapters' nested `conn.transaction()` blocks
    are savepoints, and neither a released nor a rolled-back one takes it down."""
    mine, theirs = _tenant_with_a_file(platform), _tenant_with_a_file(platform)
    walled = TenantWalledPool(platform.pool, mine)  # type: ignore[arg-type]
    with walled.connection() as conn:
        with conn.transaction():
            conn.execute("SELECT 1")
        with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
            conn.execute("SELECT 1 / 0")
        assert conn.execute("SELECT current_user").fetchone() == ("groundwork_request",)
        visible = {row[0] for row in conn.execute("SELECT tenant_id FROM sources").fetchall()}
        assert visible == {mine} and theirs not in visible


def _seen(conn: psycopg.Connection) -> tuple[object, ...]:
    row = conn.execute(
        "SELECT pg_backend_pid(), txid_current(), current_user, "
        "current_setting('groundwork.tenant_id', true)"
    ).fetchone()
    assert row is not None
    return tuple(row)


def test_a_shared_transaction_lends_one_connection_behind_one_wall(platform: Platform) -> None:
    mine, theirs = _tenant_with_a_file(platform), _tenant_with_a_file(platform)
    walled = TenantWalledPool(platform.pool, mine)  # type: ignore[arg-type]
    with shared_transaction():
        with walled.connection() as conn:
            first = _seen(conn)
        with walled.connection() as conn:
            second = _seen(conn)
            visible = {row[0] for row in conn.execute("SELECT tenant_id FROM sources").fetchall()}
    assert first == second and first[2:] == ("groundwork_request", mine)
    assert visible == {mine} and theirs not in visible
    with walled.connection() as conn:  # outside the block: a checkout (and transaction) of its own
        assert _seen(conn)[1] != first[1]


def test_after_a_failed_use_a_shared_transaction_walls_its_next_one(platform: Platform) -> None:
    """A use that raised rolls the shared transaction back (the wall falls with
    it); the next use starts a new one behind a new wall, never as the owner."""
    mine, theirs = _tenant_with_a_file(platform), _tenant_with_a_file(platform)
    walled = TenantWalledPool(platform.pool, mine)  # type: ignore[arg-type]
    with shared_transaction():
        with walled.connection() as conn:
            first = _seen(conn)
        with pytest.raises(psycopg.errors.DivisionByZero), walled.connection() as conn:
            conn.execute("SELECT 1 / 0")
        with walled.connection() as conn:
            after = _seen(conn)
            visible = {row[0] for row in conn.execute("SELECT tenant_id FROM sources").fetchall()}
    assert after[0] == first[0] and after[1] != first[1]
    assert after[2:] == ("groundwork_request", mine) and visible == {mine}
    assert theirs not in visible


def test_a_shared_transaction_ends_with_its_block(platform: Platform) -> None:
    """Committed when the block ends, rolled back when it raises; either way the
    connection goes back to the pool unwalled."""
    mine = _tenant_with_a_file(platform)
    walled = TenantWalledPool(platform.pool, mine)  # type: ignore[arg-type]

    def rename(to: str) -> None:
        with walled.connection() as conn:
            conn.execute("UPDATE sources SET filename = %s", (to,))

    with shared_transaction():
        rename("kept.txt")
    with pytest.raises(RuntimeError), shared_transaction():
        rename("dropped.txt")
        raise RuntimeError("the block fails after its write")
    with platform.pool.connection() as conn:
        names = conn.execute("SELECT filename FROM sources WHERE tenant_id = %s", (mine,))
        assert names.fetchall() == [("kept.txt",)]
    assert_pool_unwalled(platform.pool)


def test_another_thread_in_a_shared_transaction_checks_out_its_own(platform: Platform) -> None:
    """The keyword leg runs on a pool thread with the search's context copied:
    it must not use the connection the request's thread holds."""
    mine = _tenant_with_a_file(platform)
    walled = TenantWalledPool(platform.pool, mine)  # type: ignore[arg-type]

    def seen_here() -> tuple[object, ...]:
        with walled.connection() as conn:
            return _seen(conn)

    with shared_transaction(), ThreadPoolExecutor(1) as threads:
        own = seen_here()
        other = threads.submit(contextvars.copy_context().run, seen_here).result()
    assert other[0] != own[0] and other[2:] == ("groundwork_request", mine)


def test_no_adapter_commits_inside_a_checkout() -> None:
    """A commit or a rollback inside a walled checkout would end the transaction
    that holds the wall; the statements after it would run as the owner. None
    may end it (a shared transaction trusts a lent connection's open
    transaction to be the one its wall went up in)."""
    root = Path(__file__).resolve().parents[2] / "resources"
    offenders = [
        f"{path.relative_to(root.parent)}:{number}"
        for path in sorted(root.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\.commit\(\)|\.rollback\(\)|autocommit\s*=\s*True", line)
        and "database.py" not in path.name
        and "owner-only" not in line
    ]
    assert offenders == []


def test_tenant_graphs_are_never_built_through_a_wall(platform: Platform) -> None:
    from resources.postgres.vector_index import PgVectorIndex

    walled = TenantWalledPool(platform.pool, "w-anyone")  # type: ignore[arg-type]
    index = PgVectorIndex(walled, platform.vector_index(platform.settings.default_model_key).model)
    with pytest.raises(ValueError, match="owner"):
        index.refresh_tenant_graphs()


def test_a_read_outside_a_transaction_is_refused_behind_a_wall(platform: Platform) -> None:
    """The key lookup reads outside a transaction (no BEGIN or COMMIT); on a
    walled connection that would take the wall down with the transaction, so it
    is refused there, and an owner's connection goes back to the pool as it was."""
    walled = TenantWalledPool(platform.pool, _tenant_with_a_file(platform))  # type: ignore[arg-type]
    with walled.connection() as conn, pytest.raises(RuntimeError):
        with outside_a_transaction(conn):
            pass
    with platform.pool.connection() as conn:  # type: ignore[attr-defined]
        with outside_a_transaction(conn) as read:
            assert read.execute("SELECT 1").fetchone() == (1,)
        assert not conn.autocommit
