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
from dagster._serdes import ConfigurableClassData
from dagster_postgres import DagsterPostgresStorage
from dagster_postgres.utils import (
    create_pg_engine,
    get_token_provider_from_config,
    pg_url_from_config,
)

#: connections a process keeps open: the daemon's loops run on a few threads at once
POOL_SIZE = 3
#: connections above those, opened for a burst of concurrent callers and closed on return
MAX_OVERFLOW = 4
POOL_RECYCLE_SECONDS = 3600

_engines: dict[str, sqlalchemy.engine.Engine] = {}
_checked: set[str] = set()  # databases whose tables this process has checked
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


class PooledPostgresStorage(DagsterPostgresStorage):
    """`storage: custom:` in dagster.yaml, with DagsterPostgresStorage's own config."""

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
