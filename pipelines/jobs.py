"""Jobs: one per partitions definition (a run covers one partition). The
executor is set once, for every job, in the Definitions, except for
tenant_ingest_distributed, which names Dagster's Celery executor."""

from __future__ import annotations

import dagster as dg

from assets.chunks import chunks
from assets.embeddings import embeddings, index_shards
from assets.evals import retrieval_quality
from assets.extraction import extracted_documents
from assets.keyword_index import keyword_index
from assets.lifecycle import deletion_sweep
from assets.publication import published_index, serving_index
from assets.reconciliation import reconciliation
from assets.registration import source_registrations
from assets.summary_layer import overview_page, summary_layer
from resources.dagster_glue.celery_steps import distributed_executor

tenant_ingest_job = dg.define_asset_job(
    "tenant_ingest",
    selection=[
        source_registrations,
        extracted_documents,
        chunks,
        summary_layer,
        keyword_index,
        serving_index,
        overview_page,
    ],
    description="Register, extract, chunk, summarize, index, embed and publish one tenant's sources for "
    "its serving model: one run from a new file to searchable (the overview page is "
    "recompiled after publication, when what it lists changed).",
)

model_publish_job = dg.define_asset_job(
    "model_publish",
    selection=dg.AssetSelection.assets(embeddings, published_index),
    description="Embed and publish one tenant's chunks for one embedding model (a model being "
    "prepared for a switch, or a backfill; the serving model is published by tenant_ingest).",
)

deletion_sweep_job = dg.define_asset_job(
    "purge_deleted",
    # the overview page drops what was deleted (hidden from readers at once, then recompiled)
    selection=[deletion_sweep, overview_page],
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


#: the same run from stored bytes to searchable, with its steps on the worker
#: hosts (`groundwork worker`) through Dagster's Celery executor: a tenant's
#: extraction, chunks, summaries and both indexes fan out as shards of its
#: versions (assets/embeddings.py: index_shards, in place of the tenant-wide
#: extracted_documents, chunks, summary_layer and keyword_index steps, so each
#: heavy stage runs on every worker), then one publication. Registration stays
#: with tenant_ingest on the host that owns the inbox (a worker host has no
#: inbox); the API's uploads register into object storage.
tenant_ingest_distributed_job = dg.define_asset_job(
    "tenant_ingest_distributed",
    selection=[index_shards, serving_index, overview_page],
    executor_def=distributed_executor(),
    description="Extract, chunk, summarize, index and embed one tenant's registered sources "
    "in shards on any worker host, then publish: Dagster's Celery executor, broker "
    "GROUNDWORK_BROKER_URL. One publication after every shard succeeded.",
)

defs = dg.Definitions(
    jobs=[
        tenant_ingest_job,
        model_publish_job,
        deletion_sweep_job,
        reconciliation_job,
        eval_job,
        tenant_ingest_distributed_job,
    ]
)
