"""Thin Dagster resources over the composition root.

Configuration is read when a run executes (GroundworkSettings.from_env inside
`platform()`), never at import. Connection pools are cached per process and
per (database, index prefix), so every asset in a run shares one pool.
"""

from __future__ import annotations

import threading

import dagster as dg
from pydantic import PrivateAttr

from groundwork.ports import FILE_ARRIVED_TRIGGERS, TRIGGER_LABEL
from resources.composition.machine import available_cores
from resources.composition.platform import Platform, connect, ensure_engines
from resources.composition.settings import GroundworkSettings
from resources.engines.extraction_worker import DEFAULT_MEMORY_LIMIT, ExtractionWorker

_PLATFORMS: dict[tuple[str, str, str], Platform] = {}
_LOCK = threading.Lock()


def cached_platform(database: str, index_prefix: str, keyword_backend: str) -> Platform:
    key = (database, index_prefix, keyword_backend)
    with _LOCK:
        if key not in _PLATFORMS:
            env_settings = GroundworkSettings.from_env()
            if keyword_backend:
                from dataclasses import replace

                env_settings = replace(env_settings, keyword_backend=keyword_backend)
            endpoints = ensure_engines(env_settings)
            _PLATFORMS[key] = connect(
                env_settings,
                endpoints,
                database=database or None,
                index_prefix=index_prefix or None,
            )
        return _PLATFORMS[key]


class EnginesNotRunning(Exception):
    """A sensor tick found the engines stopped; it skips instead of starting them."""


def engines_running(settings: GroundworkSettings) -> str | None:
    """None when every engine this process needs is up; else which one is not."""
    from resources.composition.platform import embedded_opensearch
    from resources.engines.postgres import EmbeddedPostgres

    if not settings.database_url and not EmbeddedPostgres(settings.pgdata).is_running():
        return "PostgreSQL"
    if (
        settings.keyword_backend == "opensearch"
        and not settings.opensearch_url
        and not embedded_opensearch(settings).is_running()
    ):
        return "OpenSearch"
    if settings.blob_backend == "s3" and not settings.s3_endpoint:
        from resources.composition.blobs import embedded_seaweedfs

        # the process, not an S3 round trip: a tick must stay cheap
        if not embedded_seaweedfs(settings).has_process():
            return "SeaweedFS"
    return None


class GroundworkResource(dg.ConfigurableResource):  # type: ignore[misc]
    """The platform's stores and models for assets, sensors and checks."""

    database: str = ""  # empty: GROUNDWORK_DATABASE_NAME (default "groundwork")
    index_prefix: str = ""
    keyword_backend: str = ""

    def platform(self) -> Platform:
        return cached_platform(self.database, self.index_prefix, self.keyword_backend)

    def running_platform(self) -> Platform:
        """For sensor ticks: never starts a JVM or a database (a tick is seconds
        apart and must stay cheap); raises EnginesNotRunning instead."""
        key = (self.database, self.index_prefix, self.keyword_backend)
        with _LOCK:
            if key in _PLATFORMS:
                return _PLATFORMS[key]
        settings = GroundworkSettings.from_env()
        if self.keyword_backend:
            from dataclasses import replace

            settings = replace(settings, keyword_backend=self.keyword_backend)
        missing = engines_running(settings)
        if missing is not None:
            raise EnginesNotRunning(f"{missing} is not running; the sensor waits for it")
        return self.platform()


class ExtractionWorkerResource(dg.ConfigurableResource):  # type: ignore[misc]
    """The killable extraction children, with Dagster's resource lifecycle:
    closed when the run ends. Up to one child per core the process may use
    (`workers` = 0), so a large tenant's first ingest is not one
    single-threaded parser; the `extraction` pool keeps one such step on the
    machine at a time. Each child starts when the first document is handed to
    it (`ExtractionWorker` starts on its first call), so a run with nothing to
    extract (an hourly rescan of an unchanged inbox) starts none, and a run
    with one document starts one. Starting them with the run cost every run
    one child per core for nothing: a tenant_ingest over an unchanged 20-file
    inbox took 17-20 s wall and 6 s of the children's CPU on 2 cores, and
    6.5-7 s and 0.1 s without them (three runs each, the same engines). The
    price: a run with work no longer overlaps the children's imports with
    registration, except in a run requested *because* a file arrived (the
    API's registration trigger, the inbox watcher): that run has a document to
    extract, so its first child starts with the run and its imports (~0.6 s)
    overlap the registration step instead of delaying searchability."""

    memory_limit: int = DEFAULT_MEMORY_LIMIT
    with_ocr: bool = True
    workers: int = 0  # 0: one per available core
    _workers: list[ExtractionWorker] = PrivateAttr(default_factory=list)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        count = self.workers or available_cores()
        self._workers = [
            ExtractionWorker(memory_limit=self.memory_limit, with_ocr=self.with_ocr)
            for _ in range(max(1, count))
        ]
        run = context.run
        if run is not None and run.tags.get(TRIGGER_LABEL) in FILE_ARRIVED_TRIGGERS:
            self._workers[0].start()

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        for worker in self._workers:
            worker.close()
        self._workers = []

    def extractors(self) -> tuple[ExtractionWorker, ...]:
        if not self._workers:
            raise dg.DagsterInvariantViolationError("the extraction workers were not set up")
        return tuple(self._workers)
