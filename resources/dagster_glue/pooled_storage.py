"""Dagster's PostgreSQL storage, holding its connections.

dagster-postgres opens a new PostgreSQL connection for every storage call
(SQLAlchemy's NullPool, "to prevent accumulating connections per
DagsterInstance"): ~5 ms each on this machine, and a tenant_ingest run makes
a few hundred of them (events, asset records, run status), which was a
share of every upload -> searchable second. Each storage here keeps one
connection pooled, with a few overflow connections for concurrent callers
that are closed when returned, so a process holds one to three connections
however many calls it makes.

Only in a process that builds one instance for its whole life and says so
(`pool_this_process`: the run worker, pipelines/warm_launcher.py). A code
server builds an instance per sensor evaluation: pooled there, every
evaluation left an idle connection behind until garbage collection (32 after
a few minutes of the demo, against PostgreSQL's 100), which is why
dagster-postgres does not pool. The pool is the one Dagster's own webserver
switches to (`optimize_for_webserver`, public on each storage), without the
webserver's statement timeout: a run's long queries must not be cut off.
SQLAlchemy drops a connection the server closed (a healed PostgreSQL) on its
next use, and recycles any after an hour.
"""

from __future__ import annotations

from typing import Any

from dagster._serdes import ConfigurableClassData
from dagster_postgres import DagsterPostgresStorage
from dagster_postgres.utils import get_token_provider_from_config, pg_url_from_config

#: connections above the pooled one, opened for concurrent callers and closed on return
MAX_OVERFLOW = 4
POOL_RECYCLE_SECONDS = 3600
NO_STATEMENT_TIMEOUT = 0


_POOLED = [False]


def pool_this_process() -> None:
    """This process builds one Dagster instance and keeps it to the end (a run
    worker): its storage may hold connections."""
    _POOLED[0] = True


class PooledPostgresStorage(DagsterPostgresStorage):
    """`storage: custom:` in dagster.yaml, with DagsterPostgresStorage's own config."""

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> PooledPostgresStorage:
        storage = cls(
            inst_data=inst_data,
            postgres_url=pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            token_provider=get_token_provider_from_config(config_value),
        )
        if not _POOLED[0]:
            return storage
        for part in (storage.run_storage, storage.event_log_storage, storage.schedule_storage):
            part.optimize_for_webserver(NO_STATEMENT_TIMEOUT, POOL_RECYCLE_SECONDS, MAX_OVERFLOW)
        return storage
