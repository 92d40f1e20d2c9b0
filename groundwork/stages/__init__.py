"""The ingestion stages, one module each, named like its asset module and its
Dagster group: registration -> extraction -> chunks -> summary_layer ->
keyword_index / embeddings -> publication.

Each stage asks its narrow part of the catalog what needs doing, does it and
records that it is done, so every stage is incremental and a rerun finds
nothing to do. Dagster assets are thin wrappers around these functions.
"""
