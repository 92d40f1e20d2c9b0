"""Which tenant of the benchmark database a bench measures."""

from __future__ import annotations

from groundwork.catalog import Catalog


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
