"""Dagster's PostgreSQL storage, with one connection pool per process.

dagster-postgres opens a new PostgreSQL connection for every storage call
(SQLAlchemy's NullPool, "to prevent accumulating connections per
DagsterInstance"): ~5 ms each on this machine. A tenant_ingest run makes a
few hundred of them (events, asset records, run status), which was a share
of every upload -> searchable second; and a code server builds a new
instance for every sensor evaluation (17 connections for one instance
making four calls, 9 of them to check its tables), which made an idle demo
open 22 connections a second and keep PostgreSQL forking backends.

So all the storages a process builds for one database share one engine
whose pool keeps a few connections (Dagster's daemon runs its sensor,
schedule, queue and monitoring loops on threads of one process), with
overflow connections for bursts that are closed when returned; and the
tables are checked by the first storage of a process only. Each instance
still gets storage objects of its own: a storage belongs to one instance
(`register_instance`) and keeps per-instance caches. NullPool's reason,
connections accumulating per instance, does not arise: the pool belongs to
the process, not to an instance. There is no statement timeout: a run's long
queries must not be cut off. A connection the server closed (a healed
PostgreSQL) is found by the pool's ping before use and replaced; any is
recycled after an hour.

A forked child (the warm launcher's run workers) must neither use nor close
its parent's pooled connections: it forgets the shared engines without
closing them (SQLAlchemy's `dispose(close=False)`) and opens its own.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import sqlalchemy
from dagster._core.storage.event_log.schema import ConcurrencyLimitsTable
from dagster._serdes import ConfigurableClassData
from dagster_postgres import (
    DagsterPostgresStorage,
    PostgresEventLogStorage,
    PostgresRunStorage,
    PostgresScheduleStorage,
)
from dagster_postgres.utils import (
    create_pg_engine,
    get_token_provider_from_config,
    pg_url_from_config,
)
from sqlalchemy.dialects import postgresql

#: connections a process keeps open: the daemon's loops run on a few threads at once
POOL_SIZE = 3
#: connections above those, opened for a burst of concurrent callers and closed on return
MAX_OVERFLOW = 4
POOL_RECYCLE_SECONDS = 3600

_engines: dict[str, sqlalchemy.engine.Engine] = {}
_checked: set[str] = set()  # databases whose tables this process has checked
_present: set[tuple[str, str]] = set()  # (database, table or column) found present
_lock = threading.Lock()


def _forget_after_fork() -> None:
    """In a forked child: the inherited pools' sockets are the parent's."""
    global _lock
    _lock = threading.Lock()  # a lock another thread held at fork time stays held
    for engine in _engines.values():
        engine.dispose(close=False)
    _engines.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def _shared_engine(url: str, token_provider: Any, like: sqlalchemy.engine.Engine) -> Any:
    engine = _engines.get(url)
    if engine is None:
        kwargs: dict[str, Any] = {
            "isolation_level": "AUTOCOMMIT",
            "pool_size": POOL_SIZE,
            "max_overflow": MAX_OVERFLOW,
            "pool_recycle": POOL_RECYCLE_SECONDS,
            "pool_pre_ping": True,
        }
        options = like.url.query.get("options")
        if options:
            kwargs["connect_args"] = {"options": options}
        engine = _engines[url] = create_pg_engine(url, token_provider, **kwargs)
    return engine


def _remembered(url: str, name: str, probe: Any) -> bool:
    """Whether a table or column exists, asked of the database until it does.
    Dagster asks again on nearly every call (a catalog reflection query per
    sensor tick's instigator state, per event written): the idle daemon's
    largest remaining cost once connections were pooled. Tables and columns
    are added by `dagster instance migrate`, never dropped under a running
    process, so a present one stays present; an absent one is asked again."""
    if (url, name) in _present:
        return True
    found = bool(probe())
    if found:
        _present.add((url, name))
    return found


class _RunStorage(PostgresRunStorage):
    def has_run_stats_index_cols(self) -> bool:
        probe = super().has_run_stats_index_cols
        return _remembered(self.postgres_url, "runs.run_stats_index_cols", probe)

    def has_bulk_actions_selector_cols(self) -> bool:
        probe = super().has_bulk_actions_selector_cols
        return _remembered(self.postgres_url, "bulk_actions.selector_cols", probe)

    def has_backfill_id_column(self) -> bool:
        probe = super().has_backfill_id_column
        return _remembered(self.postgres_url, "runs.backfill_id", probe)

    def has_bulk_action_job_name_column(self) -> bool:
        probe = super().has_bulk_action_job_name_column
        return _remembered(self.postgres_url, "bulk_actions.job_name", probe)

    def has_backfill_tags_table(self) -> bool:
        probe = super().has_backfill_tags_table
        return _remembered(self.postgres_url, "backfill_tags", probe)


class _EventLogStorage(PostgresEventLogStorage):
    def initialize_concurrency_limit_to_default(self, concurrency_key: str) -> bool:
        """One upsert. Dagster's INSERT, then UPDATE on a duplicate key, runs
        the UPDATE in a transaction PostgreSQL has already aborted (dagster
        issue 33552, open at 1.13.27): two runs first claiming a pool at once
        (two `groundwork eval` ingests) crashed one of them."""
        default_limit = (
            self._instance.global_op_concurrency_default_limit if self.has_instance else None
        )
        if (
            default_limit is None
            or not self.has_concurrency_limits_table
            or not self.has_default_pool_limit_col
        ):
            return super().initialize_concurrency_limit_to_default(concurrency_key)
        self._reconcile_concurrency_limits_from_slots()
        limits = ConcurrencyLimitsTable
        upsert = postgresql.insert(limits).values(
            concurrency_key=concurrency_key, limit=default_limit, using_default_limit=True
        )
        with self.index_transaction() as conn:
            conn.execute(
                upsert.on_conflict_do_update(
                    index_elements=[limits.c.concurrency_key],
                    set_={"limit": default_limit},
                    where=limits.c.limit != default_limit,
                )
            )
            self._allocate_concurrency_slots(conn, concurrency_key, default_limit)
        return True

    def has_table(self, table_name: str) -> bool:
        probe = super().has_table
        return _remembered(self.postgres_url, table_name, lambda: probe(table_name))

    def _has_asset_key_col_on_connection(self, conn: Any, column_name: str) -> bool:
        probe = super()._has_asset_key_col_on_connection
        return _remembered(
            self.postgres_url, f"asset_keys.{column_name}", lambda: probe(conn, column_name)
        )


class _ScheduleStorage(PostgresScheduleStorage):
    def _has_instigators_table(self, conn: Any) -> bool:
        probe = super()._has_instigators_table
        return _remembered(self.postgres_url, "instigators", lambda: probe(conn))

    def _has_asset_daemon_asset_evaluations_table(self, conn: Any) -> bool:
        probe = super()._has_asset_daemon_asset_evaluations_table
        return _remembered(self.postgres_url, "asset_daemon_asset_evaluations", lambda: probe(conn))

    def has_secondary_index_table(self) -> bool:
        probe = super().has_secondary_index_table
        return _remembered(self.postgres_url, "secondary_indexes", probe)


class PooledPostgresStorage(DagsterPostgresStorage):
    """`storage: custom:` in dagster.yaml, with DagsterPostgresStorage's own config."""

    def __init__(
        self,
        postgres_url: str,
        should_autocreate_tables: bool = True,
        inst_data: ConfigurableClassData | None = None,
        token_provider: Any = None,
    ) -> None:
        """DagsterPostgresStorage's, with parts that remember the schema."""
        self.postgres_url = postgres_url
        self.should_autocreate_tables = should_autocreate_tables
        self._inst_data = inst_data
        self._run_storage = _RunStorage(
            postgres_url, should_autocreate_tables, token_provider=token_provider
        )
        self._event_log_storage = _EventLogStorage(
            postgres_url, should_autocreate_tables, token_provider=token_provider
        )
        self._schedule_storage = _ScheduleStorage(
            postgres_url, should_autocreate_tables, token_provider=token_provider
        )
        super(DagsterPostgresStorage, self).__init__()

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> PooledPostgresStorage:
        url = pg_url_from_config(config_value)
        token_provider = get_token_provider_from_config(config_value)
        with _lock:
            storage = cls(
                inst_data=inst_data,
                postgres_url=url,
                should_autocreate_tables=(
                    bool(config_value.get("should_autocreate_tables", True)) and url not in _checked
                ),
                token_provider=token_provider,
            )
            _checked.add(url)
            parts: tuple[Any, ...] = (
                storage.run_storage,
                storage.event_log_storage,
                storage.schedule_storage,
            )
            for part in parts:  # the NullPool engine each part built holds no connection
                part._engine = _shared_engine(url, token_provider, part._engine)
        return storage
