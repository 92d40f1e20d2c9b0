"""First start on a fresh home: several processes (the API, the Dagster code
server, a CLI command) may each find the database missing and create it at
the same moment. Only one CREATE DATABASE can win; the others must see the
database as created, not fail."""

from __future__ import annotations

import threading
import uuid

import psycopg
from psycopg import sql

from resources.composition.platform import EngineEndpoints
from resources.postgres.database import ensure_database, migrate


def test_concurrent_callers_create_and_migrate_a_fresh_database_once(
    engines: EngineEndpoints,
) -> None:
    database = f"gwtest_fresh_{uuid.uuid4().hex[:8]}"
    callers = 4
    barrier = threading.Barrier(callers)
    errors: list[BaseException] = []
    urls: list[str] = []

    def first_start() -> None:
        try:
            barrier.wait()
            url = ensure_database(engines.server_url, database)
            migrate(url)
            urls.append(url)
        except BaseException as exc:  # noqa: BLE001 - the test reports every failure
            errors.append(exc)

    threads = [threading.Thread(target=first_start) for _ in range(callers)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert errors == []
        assert len(urls) == callers
        with psycopg.connect(urls[0]) as conn:
            tables = conn.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = 'source_versions'"
            ).fetchone()
        assert tables is not None and tables[0] == 1
    finally:
        with psycopg.connect(engines.server_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
            )
