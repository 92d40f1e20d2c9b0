"""Connections, database creation and migrations (yoyo) for PostgreSQL.

Driver errors are translated here into the project's error types; nothing
above this package catches psycopg exceptions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg_pool import ConnectionPool

from groundwork.errors import DocumentRefused, EngineUnavailable, StoreError

MIGRATIONS_DIR = Path(__file__).resolve().parents[1] / "migrations"


@contextlib.contextmanager
def translated_errors(action: str) -> Iterator[None]:
    try:
        yield
    except psycopg.OperationalError as exc:
        raise EngineUnavailable(f"PostgreSQL unavailable while {action}: {exc}") from exc
    except psycopg.Error as exc:
        raise StoreError(f"PostgreSQL refused {action}: {exc}") from exc


@contextlib.contextmanager
def document_refusals(action: str) -> Iterator[None]:
    """Around writes of one document's values: a value over an engine limit (a
    tsvector over 1 MB, a NaN in a vector, a NUL in text) is that document's
    problem, not the engine's, so the stage can fail it alone."""
    try:
        yield
    except (psycopg.errors.ProgramLimitExceeded, psycopg.DataError) as exc:
        raise DocumentRefused(f"PostgreSQL refused {action}: {str(exc)[:300]}") from exc


@contextlib.contextmanager
def outside_a_transaction(conn: psycopg.Connection) -> Iterator[psycopg.Connection]:
    """One read on an owner's pooled connection, without BEGIN and COMMIT (two
    round trips of the three a single read took). Never on a walled connection:
    its wall lives in the checkout's transaction (owner-only)."""
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise RuntimeError("outside_a_transaction needs an idle connection")
    conn.autocommit = True  # owner-only
    try:
        yield conn
    finally:
        conn.autocommit = False


def with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, parts.fragment))


def ensure_database(server_url: str, database: str) -> str:
    """Create `database` if missing; return its URL.

    Idempotent under concurrency: on a fresh home the API, the Dagster code
    server and a CLI command can all find the database missing at once, and
    PostgreSQL has no CREATE DATABASE IF NOT EXISTS. The losers of that race see
    duplicate_database (or, when both pass the catalog check together, a unique
    violation on pg_database's name index); either means the database exists."""
    with translated_errors(f"creating database {database}"):
        with psycopg.connect(server_url, autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
            ).fetchone()
            if not exists:
                # another caller may have created it first
                with contextlib.suppress(
                    psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation
                ):
                    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    return with_database(server_url, database)


def migrate(database_url: str) -> list[str]:
    """Apply pending migrations; return the ids applied. Safe to run concurrently
    (yoyo takes a lock) and repeatedly (a second run applies nothing)."""
    from yoyo import get_backend, read_migrations

    yoyo_url = database_url.replace("postgresql://", "postgresql+psycopg://", 1)
    backend = get_backend(yoyo_url)
    migrations = read_migrations(str(MIGRATIONS_DIR))
    with backend.lock():
        pending = backend.to_apply(migrations)
        backend.apply_migrations(pending)
    return [m.id for m in pending]


def _configure(conn: psycopg.Connection) -> None:
    register_vector(conn)


def open_pool(database_url: str, max_size: int = 8, wait: bool = True) -> ConnectionPool:
    """`wait=False` for a server the platform can do without (a read replica):
    the pool connects in the background and a checkout that finds no
    connection times out, instead of failing the platform's start."""
    with translated_errors("opening a connection pool"):
        pool = ConnectionPool(
            database_url, min_size=1, max_size=max_size, configure=_configure, open=True
        )
        if wait:
            pool.wait(timeout=30)
    return pool
