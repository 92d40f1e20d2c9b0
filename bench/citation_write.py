"""What recording a search's citations costs PostgreSQL, by part.

    GROUNDWORK_HOME=H uv run python bench/citation_write.py [--tenant T] [--rounds 3] [--repeat 400]

Every search that answers writes what it handed out in one statement
(`Reading.record_citations`): the chunk ids issued to the key, a snapshot per
distinct cited text (most already stored) and one citation row per hit. This
bench runs one keyword search on the home's tenant (the largest by chunks, or
`--tenant`; engines as the home's stack started them) for real citations,
then sends that statement, and variants of it with parts left out, `--repeat`
times a round, each in a walled transaction of its own as a search's (BEGIN,
the wall, the statement, COMMIT) on one connection, and reads that backend's
CPU from /proc. Fresh citation ids each time, like a search's. The variants
run interleaved, `--rounds` times, so a shared machine's drifting load hits
them alike; each line prints every round's CPU per write and the median:

- as built
- commit not waiting for its WAL flush (`synchronous_commit` off)
- without the citation rows (the issued ids and the snapshots)
- without the snapshot upsert
- the rows parsed and hashed, nothing written
- the issued ids alone
- the wall alone: the floor of any transaction on the search path

The rows the run wrote are deleted after it and its key revoked (which
deletes the ids issued to it). The variants say what each part costs, not
what a search may leave out: each part is a guarantee (the ids drill-down
accepts, the text a citation keeps, the citation itself).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import psutil
from psycopg_pool import ConnectionPool

from bench.tenants import bench_tenant
from groundwork.citations import Citation
from groundwork.ports import AccessScope
from groundwork.services import retrieval
from groundwork.services.retrieval import SearchQuery
from resources.composition.platform import Platform, connect, ensure_engines
from resources.composition.settings import GroundworkSettings
from resources.postgres.catalog_parts.reading import (
    RECORD_CITATIONS_SQL,
    RECORD_CITED,
    RECORD_ISSUED,
    RECORD_ROWS,
    RECORD_SNAPSHOTS,
    citation_ids,
    citations_document,
    record_params,
)
from resources.postgres.tenant_wall import TenantWalledPool

#: variant -> the statements of its transaction after the wall
VARIANTS: dict[str, tuple[str, ...]] = {
    "as built": (RECORD_CITATIONS_SQL,),
    "commit not waiting for the WAL flush": (
        "SET LOCAL synchronous_commit = off",
        RECORD_CITATIONS_SQL,
    ),
    "without the citation rows": (
        f"WITH {RECORD_ISSUED}, {RECORD_CITED}, {RECORD_SNAPSHOTS} SELECT 1",
    ),
    "without the snapshot upsert": (f"WITH {RECORD_ISSUED}, {RECORD_CITED} {RECORD_ROWS}",),
    "the rows parsed and hashed, nothing written": (
        f"WITH {RECORD_CITED} SELECT count(*), max(c.snapshot_id) FROM c",
    ),
    "the issued ids alone": (f"WITH {RECORD_ISSUED} SELECT 1",),
    "the wall alone": (),
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tenant", help="default: the home's largest tenant by chunks")
    parser.add_argument(
        "--query", default="the results show", help="a keyword search that finds hits"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=400, help="writes per variant a round")
    return parser.parse_args()


def searched_citations(
    platform: Platform, tenant: str, secret: str, query: str
) -> tuple[list[Citation], list[str]]:
    """The citations of one keyword search (no query embedding needed) and its
    chunk ids, distinct and sorted as record_citations sends them."""
    authenticated = platform.catalog.authenticate(secret)
    assert authenticated is not None
    result = retrieval.search(
        platform.for_tenant(tenant),
        authenticated.principal,
        SearchQuery(query, 10, "keyword", False),
        authenticated.tenant,
    )
    citations = [issued.hit.citation for issued in result.hits]
    chunk_ids = sorted({issued.hit.chunk.chunk_id for issued in result.hits})
    return citations, chunk_ids


def measure(
    walled: TenantWalledPool,
    backend: psutil.Process,
    statements: tuple[str, ...],
    params: Callable[[], dict[str, Any]],
    repeat: int,
) -> float:
    """The backend's CPU milliseconds per write (one transaction each)."""
    started = backend.cpu_times()
    for _ in range(repeat):
        values = params()
        with walled.connection() as conn:
            for statement in statements:
                conn.execute(statement, values if "%(" in statement else None)
    ended = backend.cpu_times()
    spent = (ended.user + ended.system) - (started.user + started.system)
    return spent / repeat * 1e3


def main() -> int:
    args = parse_args()
    settings = GroundworkSettings.from_env()
    managed = replace(settings, engines_managed=True)
    engines = ensure_engines(managed)
    platform = connect(managed, engines)
    written: list[str] = []
    # one connection, so one backend to read; the platform's database
    pool: ConnectionPool[Any] = ConnectionPool(
        platform.database_url, min_size=1, max_size=1, open=True
    )
    key_id, tenant = "", None
    try:
        tenant = bench_tenant(platform.catalog, args.tenant)
        if tenant is None:
            print(f"no tenant {args.tenant or ''} in {settings.home}: ingest a corpus first")
            return 1
        key_id, secret = platform.catalog.create_api_key(
            tenant, [f"tenant:{tenant}"], "citation-write"
        )
        citations, issued = searched_citations(platform, tenant, secret, args.query)
        if not citations:
            print(f"the search {args.query!r} found nothing on {tenant}: pass --query")
            return 1
        scope = AccessScope(tenant, (f"tenant:{tenant}",))

        def params() -> dict[str, Any]:
            ids = citation_ids(len(citations))
            written.extend(ids)
            return record_params(scope, key_id, citations_document(issued, ids, citations))

        walled = TenantWalledPool(pool, tenant)
        with pool.connection() as conn:
            backend = psutil.Process(conn.info.backend_pid)
        figures: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for statements in VARIANTS.values():
            measure(walled, backend, statements, params, 20)  # warm-up
        for _ in range(args.rounds):
            for name, statements in VARIANTS.items():
                figures[name].append(measure(walled, backend, statements, params, args.repeat))
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"recording {len(citations)} citations of one search on {tenant}: PostgreSQL "
            f"backend CPU per write, {args.rounds} rounds of {args.repeat} (load average {load})"
        )
        for name, values in figures.items():
            rounds = " ".join(f"{v:.2f}" for v in values)
            print(f"  {name:<45} {statistics.median(values):.2f} ms  ({rounds})")
        return 0
    finally:
        with pool.connection() as conn:
            conn.execute("DELETE FROM citations WHERE citation_id = ANY(%s)", (written,))
        pool.close()
        if key_id and tenant is not None:
            platform.catalog.revoke_api_key(tenant, key_id)
        platform.close()


if __name__ == "__main__":
    sys.exit(main())
