"""The generated dagster.yaml is one Dagster accepts, with the warm launcher
and one run per partition at a time (a config Dagster refuses stops the whole
stack at start, which no other test would notice)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from pipelines.warm_launcher import WarmRunLauncher
from resources.composition.settings import GroundworkSettings
from resources.dagster_glue.instance import write_instance_config


def test_the_generated_instance_config_loads(
    tmp_path: Path, settings: GroundworkSettings, engines
) -> None:
    write_instance_config(tmp_path, engines.server_url)
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert isinstance(instance.run_launcher, WarmRunLauncher)
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
        assert {
            "key": "dagster/partition",
            "value": {"applyLimitPerUniqueValue": True},
            "limit": 1,
        } in limits
        # a killed run's pool slots are freed, or it blocks every later pooled step
        assert instance.run_monitoring_settings["free_slots_after_run_end_seconds"] > 0


_PROBE = """
import json, os, sys
import dagster as dg
import psycopg

home, server, mode, database = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]


def sessions():
    with psycopg.connect(server, autocommit=True) as conn:
        return conn.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = %s", (database,)
        ).fetchone()[0]


def held():
    with psycopg.connect(server, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)
        ).fetchone()[0]


def calls(instance):
    instance.get_runs(limit=1)
    instance.get_latest_materialization_event(dg.AssetKey("nothing"))


if mode == "one":  # a run worker, the daemon, the webserver: one instance for life
    with dg.DagsterInstance.from_config(home) as instance:
        calls(instance)
        before = sessions()
        for _ in range(40):
            calls(instance)
        print(json.dumps({"opened": sessions() - before, "held": held()}))
elif mode == "per-request":  # a code server: an instance per sensor evaluation
    with dg.DagsterInstance.from_config(home) as instance:
        calls(instance)
    before = sessions()
    for _ in range(20):
        with dg.DagsterInstance.from_config(home) as instance:
            calls(instance)
            calls(instance)
    print(json.dumps({"opened": sessions() - before, "held": held()}))
elif mode == "reflection":  # what a sensor tick asks of the schema, warm
    import sqlalchemy
    from resources.dagster_glue import pooled_storage

    catalog_queries = []
    with dg.DagsterInstance.from_config(home) as instance:
        calls(instance)
        instance.all_instigator_state()
        instance.get_dynamic_partitions("tenant")
        for engine in pooled_storage._engines.values():
            sqlalchemy.event.listen(
                engine,
                "before_cursor_execute",
                lambda conn, cursor, statement, *rest: catalog_queries.append(statement)
                if "pg_catalog" in statement or "information_schema" in statement
                else None,
            )
        for _ in range(10):
            with dg.DagsterInstance.from_config(home) as tick:
                calls(tick)
                tick.all_instigator_state()
                tick.get_dynamic_partitions("tenant")
    print(json.dumps({"opened": len(catalog_queries), "held": 0}))
else:  # fork: a child's instance never touches the parent's connections
    with dg.DagsterInstance.from_config(home) as instance:
        calls(instance)
        before = sessions()
        pid = os.fork()
        if pid == 0:
            with dg.DagsterInstance.from_config(home) as child:
                calls(child)
            os._exit(0)
        os.waitpid(pid, 0)
        calls(instance)  # the parent's pooled connection still answers
        print(json.dumps({"opened": sessions() - before, "held": held()}))
"""


def _probe(home: Path, server_url: str, mode: str, database: str) -> dict[str, int]:
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(home), server_url, mode, database],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.fixture
def own_database(tmp_path: Path, engines) -> Iterator[tuple[Path, str]]:
    """A Dagster database of its own: other tests' connections to `dagster` are not counted."""
    import uuid

    import psycopg

    database = f"dagster_pool_{uuid.uuid4().hex[:8]}"
    write_instance_config(tmp_path, engines.server_url, database)
    try:
        yield tmp_path, database
    finally:
        with psycopg.connect(engines.server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def test_one_instance_reuses_its_storage_connections(
    own_database: tuple[Path, str], engines
) -> None:
    """dagster-postgres opens a new connection for every storage call (NullPool):
    ~5 ms each, and a tenant_ingest run makes a few hundred of them."""
    figures = _probe(own_database[0], engines.server_url, "one", own_database[1])
    assert figures["opened"] <= 2, f"{figures} for 80 storage calls"


def test_an_instance_per_request_shares_the_process_connections(
    own_database: tuple[Path, str], engines
) -> None:
    """A code server builds a Dagster instance for every sensor evaluation (6.6
    new connections each before, to build it and for its calls, a share of the
    idle demo's 22 connections per second); the instances of one process share
    one pooled storage, and disposing one leaves nothing behind."""
    figures = _probe(own_database[0], engines.server_url, "per-request", own_database[1])
    assert figures["opened"] <= 2, f"{figures} for 20 instances of 4 storage calls"
    assert figures["held"] <= 1 + 3, figures  # the probe's own query + the pool


def test_a_forked_child_builds_its_own_storage(own_database: tuple[Path, str], engines) -> None:
    """A child forked after its parent pooled connections must not use or close
    them (SQLAlchemy's rule for pools across fork): the parent's next call works."""
    figures = _probe(own_database[0], engines.server_url, "fork", own_database[1])
    assert figures["opened"] <= 3, figures


def test_the_schema_is_asked_once_not_on_every_call(
    own_database: tuple[Path, str], engines
) -> None:
    """Dagster asks the catalog whether a table exists on nearly every call (a
    reflection query per instigator-state read: the idle daemon's largest cost
    once connections were pooled); a table found present stays present."""
    figures = _probe(own_database[0], engines.server_url, "reflection", own_database[1])
    assert figures["opened"] == 0, f"{figures['opened']} catalog queries in 10 warm ticks"


def test_two_runs_first_claiming_a_pool_at_once_both_go_on(
    own_database: tuple[Path, str], engines
) -> None:
    """Dagster sets a pool's default limit by INSERT, then UPDATE on a duplicate
    key, in a transaction PostgreSQL has already aborted (dagster#33552): two
    `groundwork eval` ingests first claiming the `embedding` pool at once
    crashed one run. Setting the default where the row exists must not raise,
    from any number of threads at once."""
    from concurrent.futures import ThreadPoolExecutor

    with dg.DagsterInstance.from_config(str(own_database[0])) as instance:
        storage = instance.event_log_storage
        assert storage.initialize_concurrency_limit_to_default("embedding")
        assert storage.initialize_concurrency_limit_to_default("embedding")  # the row exists
        with ThreadPoolExecutor(8) as pool:
            done = list(
                pool.map(storage.initialize_concurrency_limit_to_default, ["extraction"] * 8)
            )
        assert done == [True] * 8
        for key in ("embedding", "extraction"):
            info = storage.get_concurrency_info(key)
            assert info.slot_count == 1, (key, info)
