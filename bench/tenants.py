"""The benchmark database, the data set the search benches ask, and which of
its tenants a bench measures."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from groundwork.catalog import Catalog
from groundwork.eval_records import EvalSuite
from resources.composition.platform import Platform, connect, ensure_engines
from resources.composition.settings import GroundworkSettings

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


def add_corpus_arguments(parser: argparse.ArgumentParser) -> None:
    """--beir, --split and --tenant, as the benches over the bench database's
    BEIR tenant take them."""
    parser.add_argument("--beir", type=Path, default=SCIFACT)
    parser.add_argument("--split", default="train")
    parser.add_argument("--tenant", help="default: the bench database's largest tenant")


def connect_bench_database(*, serving: bool = False) -> Platform:
    """The platform over the bench database, named in the environment too (so
    what reads its settings from there, such as an in-process API, agrees)."""
    os.environ["GROUNDWORK_DATABASE_NAME"] = DATABASE
    os.environ["GROUNDWORK_INDEX_PREFIX"] = PREFIX
    settings = GroundworkSettings.from_env()
    return connect(
        settings, ensure_engines(settings), database=DATABASE, index_prefix=PREFIX, serving=serving
    )


@contextmanager
def eval_home_platform() -> Iterator[Platform]:
    """The platform over GROUNDWORK_HOME's engines, where `groundwork eval`
    ingested its tenants (started when they were not running), closed after."""
    settings = GroundworkSettings.from_env()
    platform = connect(settings, ensure_engines(settings))
    try:
        yield platform
    finally:
        platform.close()


def eval_suite(platform: Platform, tenant_id: str) -> EvalSuite | None:
    """The eval tenant's suite (set by `groundwork eval`), saying so when it has none."""
    suite = platform.eval_runs.suite(tenant_id)
    if suite is None:
        print(f"{tenant_id} has no eval suite", file=sys.stderr)
    return suite
