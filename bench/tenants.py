"""The benchmark database, the data set the search benches ask, and which of
its tenants a bench measures."""

from __future__ import annotations

from pathlib import Path

from groundwork.catalog import Catalog

#: the database and index prefix `bench/ingest_and_search.py` ingests into and
#: the search benches read
DATABASE = "groundwork_bench"
PREFIX = "gwbench"
#: SciFact in BEIR layout, beside the checkout
SCIFACT = Path(__file__).resolve().parents[2] / "shared/data/scifact"


def bench_tenant(catalog: Catalog, requested: str | None = None) -> str | None:
    """The tenant asked for (`--tenant`), else the largest by chunks: the BEIR
    corpus `bench/ingest_and_search.py --beir` ingested, as long as it is the
    biggest corpus loaded (a larger synthetic one would be picked instead, and
    BEIR queries would then run against it: pass `--tenant`). None when the
    database has no tenant, or not the one asked for."""
    tenants = catalog.list_tenants()
    if requested is not None:
        return requested if any(t.tenant_id == requested for t in tenants) else None
    if not tenants:
        return None
    return max(tenants, key=lambda t: catalog.counts(t.tenant_id).chunks).tenant_id


def found_bench_tenant(catalog: Catalog, requested: str | None, advice: str) -> str | None:
    """`bench_tenant`, saying why when there is none: no corpus (then `advice`,
    what to run first) or not the tenant asked for."""
    tenant = bench_tenant(catalog, requested)
    if tenant is None:
        print(
            f"no benchmark corpus: {advice}"
            if requested is None
            else f"no tenant {requested} in the bench database"
        )
    return tenant
