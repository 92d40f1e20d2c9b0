"""The generated dagster.yaml is one Dagster accepts, with the warm launcher
and one run per partition at a time (a config Dagster refuses stops the whole
stack at start, which no other test would notice)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

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
import json, sys
import dagster as dg
import psycopg
from resources.dagster_glue.pooled_storage import pool_this_process

home, server, pooled, database = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
if pooled:
    pool_this_process()


def sessions():
    with psycopg.connect(server, autocommit=True) as conn:
        return conn.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = %s", (database,)
        ).fetchone()[0]


with dg.DagsterInstance.from_config(home) as instance:
    instance.get_runs(limit=1)
    before = sessions()
    for _ in range(40):
        instance.get_runs(limit=1)
        instance.get_latest_materialization_event(dg.AssetKey("nothing"))
    print(json.dumps(sessions() - before))
"""


def _opened(home: Path, server_url: str, pooled: bool, database: str) -> int:
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(home), server_url, "1" if pooled else "0", database],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return int(json.loads(out.stdout.strip().splitlines()[-1]))


def test_a_run_worker_reuses_its_storage_connections(
    tmp_path: Path, settings: GroundworkSettings, engines
) -> None:
    """dagster-postgres opens a new connection for every storage call (NullPool):
    ~5 ms each, and a tenant_ingest run makes a few hundred of them. A run
    worker (which says so) keeps them pooled; any other process, which may
    build an instance per request (a code server's sensor evaluations), does not
    hold connections it would leave behind."""
    import uuid

    # a database of its own: other tests' connections to `dagster` are not counted
    database = f"dagster_pool_{uuid.uuid4().hex[:8]}"
    write_instance_config(tmp_path, engines.server_url, database)
    try:
        pooled = _opened(tmp_path, engines.server_url, True, database)
        assert pooled <= 2, f"{pooled} new connections for 80 storage calls"
        assert _opened(tmp_path, engines.server_url, False, database) >= 80
    finally:
        import psycopg

        with psycopg.connect(engines.server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
