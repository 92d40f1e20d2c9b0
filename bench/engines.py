"""The engines a bench runs on: started when they were not running, and only
those it started are stopped when it ends (a running demo's or test suite's
engines are left alone)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from resources.composition.platform import (
    EngineEndpoints,
    Platform,
    connect,
    embedded_opensearch,
    ensure_engines,
)
from resources.composition.settings import GroundworkSettings
from resources.engines.postgres import EmbeddedPostgres


@dataclass(frozen=True, slots=True)
class BenchEngines:
    endpoints: EngineEndpoints
    started_postgres: bool
    started_opensearch: bool

    @classmethod
    def start(cls, settings: GroundworkSettings) -> BenchEngines:
        # "started" means no process before: PostgreSQL's postmaster.pid, the node's
        # pid file (a loaded node may miss a health probe's deadline)
        postgres_was_running = EmbeddedPostgres(settings.pgdata).is_running()
        opensearch = embedded_opensearch(settings)
        opensearch_was_running = opensearch.has_process() or opensearch.is_running()
        return cls(ensure_engines(settings), not postgres_was_running, not opensearch_was_running)

    def stop_started(self) -> None:
        if self.started_opensearch and self.endpoints.opensearch is not None:
            self.endpoints.opensearch.stop()
        if self.started_postgres and self.endpoints.postgres is not None:
            self.endpoints.postgres.stop()


@contextmanager
def bench_platform(settings: GroundworkSettings, database: str, prefix: str) -> Iterator[Platform]:
    """The platform over a bench's own database and index prefix, on engines
    started if they were not running; closed, and those engines stopped, after."""
    engines = BenchEngines.start(settings)
    platform = connect(settings, engines.endpoints, database=database, index_prefix=prefix)
    try:
        yield platform
    finally:
        platform.close()
        engines.stop_started()


@contextmanager
def scratch_home(path: Path) -> Iterator[Path]:
    """A home for engines a bench starts for itself: emptied first (a run
    interrupted before left its data), removed at the end."""
    shutil.rmtree(path, ignore_errors=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
