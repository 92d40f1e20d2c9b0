"""Embeddings: a version's chunks embedded and written hidden into its model's vector index."""

from __future__ import annotations

import time

from groundwork.catalog import (
    ChunkBatch,
    StageProgress,
    VersionShard,
)
from groundwork.errors import DimensionMismatch, DocumentRefused
from groundwork.ports import (
    EmbeddingProvider,
    VectorIndex,
    VectorRecord,
)
from groundwork.stages.report import StageReport, fail_version


def _write_finished(
    catalog: StageProgress,
    vectors: VectorIndex,
    waiting: list[ChunkBatch],
    cached: dict[str, tuple[float, ...]],
    refused_hashes: dict[str, str],
    embedded_now: set[str],
    report: StageReport,
) -> list[ChunkBatch]:
    """Write and mark each version whose every chunk has its vector, as soon as
    it is complete (a crash loses at most one model batch); a version with a
    refused text fails alone. Returns the versions still waiting."""
    still: list[ChunkBatch] = []
    for item in waiting:
        refusal = next(
            (
                refused_hashes[c.content_hash]
                for c in item.chunks
                if c.content_hash in refused_hashes
            ),
            None,
        )
        if refusal is None and not all(c.content_hash in cached for c in item.chunks):
            still.append(item)
            continue
        try:
            if refusal is not None:
                raise DocumentRefused(refusal)
            records = [VectorRecord(c, cached[c.content_hash]) for c in item.chunks]
            # hidden, beside the published version's vectors (see publish_ready)
            vectors.upsert(records)
        except DocumentRefused as refused:
            # this version's own problem: the others are still embedded
            fail_version(catalog, item.version, str(refused), report)
            continue
        catalog.mark_embedded(item.version.version_id, item.version.tenant_id, vectors.model.key)
        report.processed += 1
        report.items += len(records)
        report.reused += sum(1 for c in item.chunks if c.content_hash not in embedded_now)
    return still


def embed_pending(
    catalog: StageProgress,
    vectors: VectorIndex,
    embedder: EmbeddingProvider,
    tenant_id: str,
    batch: int = 200,
    embed_batch: int = 32,
    shard: VersionShard | None = None,
) -> StageReport:
    """Embed the tenant's waiting versions (only `shard`'s slice, when given:
    a shard of a large tenant's embedding, on any worker). Each version is
    marked as soon as its vectors are written, so a shard retried after a
    crash skips what it finished; vectors are upserted by chunk id, so a
    version written twice (a crash between write and mark) has its rows once."""
    if embedder.model.key != vectors.model.key:
        raise DimensionMismatch(
            f"embedder model {embedder.model.key} does not match index model {vectors.model.key}"
        )
    report = StageReport()
    started = time.monotonic()
    model_key = vectors.model.key
    while items := catalog.batches_to_embed(tenant_id, model_key, batch, shard):
        # One cache lookup and full model batches across the versions of this
        # batch: per version, a document of four chunks fed the model batches
        # of four (the embedding stage ran 60% over the bare model time).
        cached = vectors.existing_vectors(
            tenant_id, sorted({c.content_hash for item in items for c in item.chunks})
        )
        missing = list(
            {
                c.content_hash: c.content
                for item in items
                for c in item.chunks
                if c.content_hash not in cached
            }.items()
        )
        embedded_now = {content_hash for content_hash, _ in missing}
        refused_hashes: dict[str, str] = {}
        waiting = list(items)

        waiting = _write_finished(
            catalog, vectors, waiting, cached, refused_hashes, embedded_now, report
        )
        for start in range(0, len(missing), embed_batch):
            part = missing[start : start + embed_batch]
            try:
                vectors_out = embedder.embed_documents([text for _, text in part])
            except DocumentRefused:
                # one text's problem: embed this part one by one to find it
                vectors_out = []
                for content_hash, text in part:
                    try:
                        vectors_out.append(embedder.embed_documents([text])[0])
                    except DocumentRefused as refused:
                        refused_hashes[content_hash] = str(refused)
                        vectors_out.append(())
            for (content_hash, _), vector in zip(part, vectors_out, strict=True):
                if vector:
                    cached[content_hash] = vector
            waiting = _write_finished(
                catalog, vectors, waiting, cached, refused_hashes, embedded_now, report
            )
    report.seconds = time.monotonic() - started
    return report
