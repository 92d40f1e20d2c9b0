"""The code location: each asset, job and sensor module exposes the `defs` it
defines (the way Dagster's own deployment assembles its code location); this
module merges them and binds the resource and the executor once."""

from __future__ import annotations

from types import ModuleType

import dagster as dg

from assets import (
    chunks,
    connectors,
    embeddings,
    evals,
    extraction,
    freshness,
    keyword_index,
    lifecycle,
    publication,
    reconciliation,
    registration,
    summary_layer,
)
from pipelines import connector_sensors, jobs, run_traces, sensors
from resources.composition.settings import GroundworkSettings
from resources.dagster_glue.platform_resource import GroundworkResource

#: in pipeline order: registration -> ... -> publication, then upkeep and evals
STAGE_MODULES: tuple[ModuleType, ...] = (
    registration,
    extraction,
    chunks,
    summary_layer,
    keyword_index,
    embeddings,
    publication,
    lifecycle,
    reconciliation,
    connectors,
    evals,
)
ALL_ASSETS = [a for module in STAGE_MODULES for a in module.defs.assets or ()]


def build_definitions(
    groundwork: GroundworkResource | None = None,
    *,
    tracing: bool = True,
    inbox_watcher: bool = False,
    requested_on_store: bool = False,
) -> dg.Definitions:
    return dg.Definitions.merge(
        *(module.defs for module in STAGE_MODULES),
        freshness.defs,  # a check on serving_index, no asset of its own: not a stage
        jobs.defs,
        sensors.definitions(inbox_watcher, requested_on_store),
        run_traces.definitions(tracing),  # the run-trace sensor
        connector_sensors.defs,
        dg.Definitions(
            resources={"groundwork": groundwork or GroundworkResource()},
            # One process per run: the default multiprocess executor paid process
            # start, imports, engine checks and model loading again for every step
            # (a run of one small file took 16 s that way).
            executor=dg.in_process_executor,
        ),
    )


@dg.definitions
def defs() -> dg.Definitions:
    """The code location, built when Dagster loads it (code server, run
    worker), never at import: the run-trace sensor only where tracing is
    configured, so an install without it has no sensor ticking for nothing; the
    inbox sensor as a slow fallback where the supervisor's watcher runs, and the
    pending-work sensor where runs are requested through the orchestrator's URL
    as work is stored."""
    settings = GroundworkSettings.from_env()
    return build_definitions(
        tracing=settings.otlp_endpoint is not None,
        inbox_watcher=settings.inbox_watcher,
        requested_on_store=settings.dagster_url is not None,
    )
