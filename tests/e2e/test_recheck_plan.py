"""The search path's re-check query is planned with its values, every time.

psycopg prepares a statement after its fifth run on a connection, and
PostgreSQL may then keep one generic plan for every tenant. For the re-check
(`load_chunks`: the legs' candidate ids joined to the publication pointer) the
generic plan starts from the tenant's published sources and reads every chunk
of them: bench/scale.py --full measured 17 ms instead of 2 ms per search for a
6,400-chunk tenant, and that cost grows with the tenant. The vector leg is
never prepared for the same reason (resources/postgres/vector_index.py).
"""

from __future__ import annotations

from groundwork.ports import AccessScope
from resources.platform import Platform
from resources.postgres.catalog import PostgresCatalog
from resources.postgres.catalog_parts.reading import PublishedChunkReader
from resources.postgres.database import open_pool
from resources.postgres.tenant_wall import TenantWalledPool
from tests.e2e.helpers import tenant_with_notes


def test_the_recheck_query_is_never_a_prepared_statement(platform: Platform) -> None:
    tenant = tenant_with_notes(platform, "plan", 1)
    pool = open_pool(platform.database_url, max_size=1)  # one session: the statement's home
    try:
        reader = PublishedChunkReader(
            PostgresCatalog(TenantWalledPool(pool, tenant)), platform.settings.default_model_key
        )
        scope = AccessScope(tenant, (f"tenant:{tenant}",))
        for _ in range(12):  # past psycopg's prepare threshold (5) and PostgreSQL's (5)
            reader.load_chunks(scope, ["ch_a", "ch_b"])
        with pool.connection() as conn:
            prepared = conn.execute(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                ("%FROM chunks c JOIN sources s%",),
            ).fetchone()
        assert prepared == (0,)
    finally:
        pool.close()
