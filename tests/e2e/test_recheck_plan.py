"""The search path's re-check query starts from the candidate ids, in every plan
PostgreSQL may choose, so it can be a prepared statement.

The re-check (`load_chunks`: the legs' candidate ids joined to the publication
pointer) used to filter `chunk_id = ANY(ids)`. Planned with its values it
started from the ids; a generic plan (PostgreSQL keeps one after a prepared
statement's fifth run) started from the tenant's published sources and read
every chunk of them: bench/scale.py --full measured 17 ms instead of 2 ms per
search for a 6,400-chunk tenant. So it was never prepared, and every search
paid about 1 ms of planning for it, and 2 ms of server time in all.

Now the ids are a relation (`unnest`) the query joins from: the generic plan
estimates a handful of rows for it and drives from it, like the custom plans.
The vector leg stays unprepared (its plan depends on per-transaction settings,
resources/postgres/vector_index.py).
"""

from __future__ import annotations

import uuid

import psycopg

from groundwork.ports import AccessScope
from resources.composition.platform import Platform
from resources.postgres.catalog import PostgresCatalog
from resources.postgres.catalog_parts.reading import RECHECK_SQL, PublishedChunkReader
from resources.postgres.database import open_pool
from resources.postgres.tenant_wall import TenantWalledPool
from tests.e2e.helpers import publish_registered, tenant_with_notes


def _plan(conn: psycopg.Connection, tenant: str, model_key: str, ids: list[str]) -> list[str]:
    """The generic plan of the re-check statement, as a prepared statement gets it."""
    conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
    # the parameters' order and types, as Reading.load_chunks passes them
    conn.execute(
        "PREPARE recheck_probe(text, text, text, float8, text, text[], text, text[]) AS "
        + _numbered(RECHECK_SQL)
    )
    try:
        # the system corpus read too (its owner and subjects): the plan still
        # starts from the ids
        rows = psycopg.ClientCursor(conn).execute(
            "EXPLAIN EXECUTE recheck_probe(%s, %s, %s, %s, %s, %s, %s, %s)",
            (
                ",".join(ids),
                model_key,
                tenant,
                30.0,
                tenant,
                [f"tenant:{tenant}"],
                "system",
                ["tenant:system"],
            ),
        )
        return [r[0] for r in rows.fetchall()]
    finally:
        conn.execute("DEALLOCATE recheck_probe")


def _numbered(statement: str) -> str:
    n = 0
    while "%s" in statement:
        n += 1
        statement = statement.replace("%s", f"${n}", 1)
    return statement


def test_the_recheck_starts_from_the_candidate_ids_even_in_a_generic_plan(
    platform: Platform,
) -> None:
    tenant = tenant_with_notes(platform, "plan", 40)
    publish_registered(platform, tenant)
    model_key = platform.settings.default_model_key
    scope = AccessScope(tenant, (f"tenant:{tenant}",))
    reader = PublishedChunkReader(platform.for_tenant(tenant).catalog, model_key)
    ids = list(reader_ids(platform, tenant))[:5]
    assert len(reader.load_chunks(scope, ids)) == 5
    with platform.for_tenant(tenant).pool.connection() as conn:  # behind the tenant wall
        plan = _plan(conn, tenant, model_key, ids)
    scans = [line.strip() for line in plan if "Scan" in line]
    assert "Function Scan on unnest" in scans[0], "\n".join(plan)
    assert not any(s.startswith("Seq Scan") for s in scans), "\n".join(plan)


def reader_ids(platform: Platform, tenant: str) -> list[str]:
    with platform.pool.connection() as conn:
        rows = conn.execute(
            "SELECT chunk_id FROM chunks WHERE tenant_id = %s ORDER BY chunk_id", (tenant,)
        ).fetchall()
    return [r[0] for r in rows]


def test_the_recheck_query_is_prepared_and_answers_the_same(platform: Platform) -> None:
    """Past the prepare thresholds (psycopg's and PostgreSQL's, five runs each)
    the statement is a server-side prepared statement, and its answers do not
    change when it is."""
    tenant = tenant_with_notes(platform, "plan", 3)
    publish_registered(platform, tenant)
    ids = reader_ids(platform, tenant)
    pool = open_pool(platform.database_url, max_size=1)  # one session: the statement's home
    try:
        reader = PublishedChunkReader(
            PostgresCatalog(TenantWalledPool(pool, tenant)), platform.settings.default_model_key
        )
        scope = AccessScope(tenant, (f"tenant:{tenant}",))
        first = reader.load_chunks(scope, ids)
        assert set(first) == set(ids)
        for _ in range(12):
            assert reader.load_chunks(scope, ids) == first
        assert reader.load_chunks(scope, ["ch_missing", *ids[:1]]) == {ids[0]: first[ids[0]]}
        assert reader.load_chunks(AccessScope(tenant, ("team:other",)), ids) == {}
        with pool.connection() as conn:
            prepared = conn.execute(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                ("%unnest(string_to_array(%",),
            ).fetchone()
        assert prepared is not None and prepared[0] >= 1
    finally:
        pool.close()


def test_recording_citations_looks_each_source_up_by_key_even_in_a_generic_plan(
    platform: Platform,
) -> None:
    """Every search records its citations in one statement that gives each
    citation its source's scope. Joined plainly to the JSON document of the
    citations (which the planner guesses at 100 rows), `sources` was read whole
    and hashed on every search: 3 ms of PostgreSQL for the SciFact tenant's
    6,231 sources, more with every source a tenant adds. Each source is now
    looked up by its key."""
    tenant = tenant_with_notes(platform, "cited", 40)
    publish_registered(platform, tenant)
    # a tenant of SciFact's size (the planner reads the table's statistics):
    # rows of sources only, removed after
    with platform.pool.connection() as conn:
        conn.execute(
            "INSERT INTO sources (source_id, tenant_id, origin, filename, subjects) "
            "SELECT 'src_cited_' || g, %s, 'bulk:' || g, 'f' || g, ARRAY[%s] "
            "FROM generate_series(1, 6000) AS g",
            (tenant, f"tenant:{tenant}"),
        )
        conn.execute("ANALYZE sources")
    try:
        plan = _cited_rows_plan(platform, tenant)
    finally:
        with platform.pool.connection() as conn:
            conn.execute("DELETE FROM sources WHERE source_id LIKE 'src_cited_%%'")
    scans = [line.strip() for line in plan if "Scan" in line]
    assert "Function Scan on jsonb_to_recordset" in scans[0], "\n".join(plan)
    assert not any(s.startswith("Seq Scan on sources") for s in scans), "\n".join(plan)


def _cited_rows_plan(platform: Platform, tenant: str) -> list[str]:
    from resources.postgres.catalog_parts.reading import CITED_ROWS_SQL

    statement = (
        CITED_ROWS_SQL.replace("%(tenant)s", "$1")
        .replace("%(doc)s", "$2")
        .replace("%(owners)s", "$3")
    )
    with platform.for_tenant(tenant).pool.connection() as conn:
        conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        conn.execute(f"PREPARE cited_probe(text, text, text[]) AS {statement}")
        try:
            document = '{"rows": [{"citation_id": "cit_a", "source_id": "src_missing"}]}'
            rows = psycopg.ClientCursor(conn).execute(
                "EXPLAIN EXECUTE cited_probe(%s, %s, %s)", (tenant, document, [tenant])
            )
            return [r[0] for r in rows.fetchall()]
        finally:
            conn.execute("DEALLOCATE cited_probe")


def test_the_issued_ids_are_checked_by_their_conflict_alone(platform: Platform) -> None:
    """A search records the ids it hands out, leaving alone those its key was
    issued in the last minutes. Written as NOT EXISTS, the planner merged that
    check into an anti join that read every id the key was ever issued (1,421
    rows and 1 ms for a key a minute old under load, growing with the key's
    age); as a lateral lookup, on a table without statistics, it read them
    all once per id (CI's fresh database). The primary key's conflict is the
    check now: the plan reads no row of `issued_chunks`, however many the key
    holds, and the rows come out as tests/e2e/test_citation_storage.py says."""
    from resources.postgres.catalog_parts.reading import _UPSERT_ISSUED

    key_id = f"key_plan_{uuid.uuid4().hex[:12]}"
    with platform.pool.connection() as conn:
        conn.execute(
            "INSERT INTO issued_chunks (key_id, chunk_id) "
            "SELECT %s, 'ch_' || lpad(to_hex(g), 32, '0') FROM generate_series(1, 3000) AS g",
            (key_id,),
        )
        ids = [f"ch_{n:032x}" for n in (5, 17, 4000, 4001)]
        plan = [
            r[0]
            for r in psycopg.ClientCursor(conn)
            .execute("EXPLAIN " + _UPSERT_ISSUED, {"key": key_id, "ids": ids})
            .fetchall()
        ]
        conn.rollback()  # EXPLAIN without ANALYZE wrote nothing; the key's rows go
    text = "\n".join(plan)
    assert "Conflict Arbiter Indexes: issued_chunks_pkey" in text, text
    assert not [line for line in plan if "Scan" in line and "issued_chunks" in line], text
