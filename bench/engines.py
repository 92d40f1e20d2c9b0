"""The engines a bench runs on: started when they were not running, and only
those it started are stopped when it ends (a running demo's or test suite's
engines are left alone)."""

from __future__ import annotations

from dataclasses import dataclass

from resources.engines.postgres import EmbeddedPostgres
from resources.platform import EngineEndpoints, embedded_opensearch, ensure_engines
from resources.settings import GroundworkSettings


@dataclass(frozen=True, slots=True)
class BenchEngines:
    endpoints: EngineEndpoints
    started_postgres: bool
    started_opensearch: bool

    @classmethod
    def start(cls, settings: GroundworkSettings) -> BenchEngines:
        # "started" means not running before: judged by each engine's own probe
        postgres_was_running = EmbeddedPostgres(settings.pgdata).is_running()
        opensearch_was_running = embedded_opensearch(settings).is_running()
        return cls(ensure_engines(settings), not postgres_was_running, not opensearch_was_running)

    def stop_started(self) -> None:
        if self.started_opensearch and self.endpoints.opensearch is not None:
            self.endpoints.opensearch.stop()
        if self.started_postgres and self.endpoints.postgres is not None:
            self.endpoints.postgres.stop()
