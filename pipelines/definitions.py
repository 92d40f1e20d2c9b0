"""The code location: every asset, check, job, sensor and schedule."""

from __future__ import annotations

import dagster as dg

from assets.chunks import chunks
from assets.embeddings import embeddings
from assets.evals import retrieval_quality
from assets.extraction import extracted_documents
from assets.keyword_index import keyword_index
from assets.lifecycle import deletion_sweep
from assets.publication import published_index, serving_index
from assets.reconciliation import reconciliation
from assets.registration import source_registrations
from assets.summary_layer import summary_drift_check, summary_layer
from pipelines.jobs import (
    deletion_sweep_job,
    eval_job,
    model_publish_job,
    reconciliation_job,
    tenant_ingest_job,
)
from pipelines.sensors import (
    deletion_sensor,
    evaluate_after_publish,
    inbox_rescan_schedule,
    inbox_sensor,
    pending_work_sensor,
    reconciliation_schedule,
    tenant_partitions_sensor,
)
from resources.dagster_resources import GroundworkResource

ALL_ASSETS = [
    source_registrations,
    extracted_documents,
    chunks,
    summary_layer,
    keyword_index,
    embeddings,
    published_index,
    serving_index,
    deletion_sweep,
    reconciliation,
    retrieval_quality,
]


def build_definitions(groundwork: GroundworkResource | None = None) -> dg.Definitions:
    return dg.Definitions(
        assets=ALL_ASSETS,
        asset_checks=[summary_drift_check],
        jobs=[
            tenant_ingest_job,
            model_publish_job,
            deletion_sweep_job,
            reconciliation_job,
            eval_job,
        ],
        sensors=[
            inbox_sensor,
            pending_work_sensor,
            deletion_sensor,
            evaluate_after_publish,
            tenant_partitions_sensor,
        ],
        schedules=[inbox_rescan_schedule, reconciliation_schedule],
        resources={"groundwork": groundwork or GroundworkResource()},
        # One process per run: the default multiprocess executor paid process
        # start, imports, engine checks and model loading again for every step
        # (a run of one small file took 16 s that way).
        executor=dg.in_process_executor,
    )


defs = build_definitions()
