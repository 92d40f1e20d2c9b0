"""Jobs: one per partitions definition (a run covers one partition). The
executor is set once, for every job, in the Definitions."""

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
from assets.summary_layer import summary_layer

tenant_ingest_job = dg.define_asset_job(
    "tenant_ingest",
    selection=[
        source_registrations,
        extracted_documents,
        chunks,
        summary_layer,
        keyword_index,
        serving_index,
    ],
    description="Register, extract, chunk, summarize, index, embed and publish one tenant's sources for "
    "its serving model: one run from a new file to searchable.",
)

model_publish_job = dg.define_asset_job(
    "model_publish",
    selection=dg.AssetSelection.assets(embeddings, published_index),
    description="Embed and publish one tenant's chunks for one embedding model (a model being "
    "prepared for a switch, or a backfill; the serving model is published by tenant_ingest).",
)

deletion_sweep_job = dg.define_asset_job(
    "purge_deleted",
    selection=[deletion_sweep],
    description="Purge deleted sources of one tenant from every store and prove it.",
)

reconciliation_job = dg.define_asset_job(
    "reconcile_storage",
    selection=[reconciliation],
    description="Compare the catalog with the blob store, both directions (reports only).",
)

eval_job = dg.define_asset_job(
    "evaluate_retrieval",
    selection=[retrieval_quality],
    description="Score one tenant x model on its eval suite; store, report, gate.",
)

defs = dg.Definitions(
    jobs=[tenant_ingest_job, model_publish_job, deletion_sweep_job, reconciliation_job, eval_job]
)
