"""An artifact is indexed as part of being saved.

After the commit that makes a version current, the save takes that version,
and only it (never the tenant's other waiting documents), through the steps
the pipeline's stages would: extraction of the Markdown body, chunks, the
summary page, the keyword index, the serving model's vectors, publication.
Each step is the catalog's own and idempotent (the extraction claimed by
compare-and-set, rows keyed by chunk id), so a pipeline run racing the save
repeats work at worst and never writes anything different.

The save says how far it got, from a closed set: `indexed` (searchable and
citable now), `pending` (the pipeline finishes it: another worker holds the
extraction, or the budget ran out) or `failed` with the reason. The artifact
is committed before indexing starts, so a store that fails (an engine down)
never undoes the save: the version keeps the stage state it reached, the
backlog sensor sees the work, and the next pipeline run or an explicit retry
goes on from there. Only a refusal of the text itself (an extraction failure,
a store refusing the document) fails the version for good, as the pipeline
would fail it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from groundwork.catalog import ChunkBatch, StageProgress, SummaryLedger
from groundwork.chunking import ChunkingPolicy, StructureAwareChunking
from groundwork.documents import ExtractionFailure
from groundwork.errors import DocumentRefused
from groundwork.extract import extract
from groundwork.ports import BlobStore, EmbeddingProvider, KeywordIndex, VectorIndex, VectorRecord
from groundwork.stages.publication import retire_superseded
from groundwork.stages.report import StageReport, fail_version
from groundwork.summaries import RawChunk, Summarizer, SummaryTarget, compile_summary

IndexingState = Literal["indexed", "pending", "failed"]

#: what the save may spend on its own indexing before leaving the rest to the
#: pipeline. A body is at most 200,000 characters (~200 chunks of 256 tokens:
#: a few seconds of int8 bge on one core); the budget bounds a slow or cold
#: model, never a normal save.
SAVE_INDEXING_SECONDS = 30.0
#: texts per embedding call, as the embedding stage's model batches
EMBED_BATCH = 32


@dataclass(frozen=True, slots=True)
class Indexing:
    """Where a saved version's indexing stands (and why, when not indexed)."""

    state: IndexingState
    reason: str | None = None

    def to_dict(self) -> dict[str, str]:
        """The tools' shape: `reason` only when there is one."""
        return {"state": self.state, **({"reason": self.reason} if self.reason else {})}


class IndexingCatalog(StageProgress, SummaryLedger, Protocol):
    """The catalog's stage progress and summary ledger."""


@dataclass(frozen=True, slots=True)
class SaveIndexes:
    """What a save indexes into: the catalog and the blobs (the version's
    Markdown), the keyword index, the tenant's serving model's vector index
    and embedder (the same model), the summarizer the pipeline uses (None:
    extractive) and the other models' vector indexes (a superseded version
    leaves them too)."""

    catalog: IndexingCatalog
    blobs: BlobStore
    keywords: KeywordIndex
    vectors: VectorIndex
    embedder: EmbeddingProvider
    summarizer: Summarizer | None = None
    other_vectors: Sequence[VectorIndex] = ()


def token_budget(embedder: EmbeddingProvider) -> int:
    """Chunk and summary size in the model's tokens, as the pipeline's stages size them."""
    return min(256, embedder.model.max_tokens)


def indexing_of(status: Mapping[str, object] | None) -> Indexing:
    """The state a reader sees, from the catalog's status of the current
    version (`published` for the serving model, `processing_state`,
    `failure_reason`): indexed once published, failed when the version
    failed, pending otherwise (the pipeline, or a retry, has it to do)."""
    if status is None:
        return Indexing("pending", "the artifact's document is not visible yet")
    if status.get("published"):
        return Indexing("indexed")
    if status.get("processing_state") == "failed":
        return Indexing("failed", str(status.get("failure_reason") or "failed"))
    return Indexing("pending", "waiting for the ingest pipeline (or a retry of the indexing)")


def index_saved(
    indexes: SaveIndexes,
    version_id: str,
    *,
    budget_seconds: float = SAVE_INDEXING_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> Indexing:
    """Take the committed version `version_id` as far as publication for the
    serving model; never raises: whatever goes wrong is the answer, and the
    saved artifact stands."""
    deadline = clock() + budget_seconds
    try:
        return _index(indexes, version_id, lambda: clock() > deadline)
    except Exception as exc:  # the save is committed: a failure here is a value, never an undo
        return Indexing(
            "failed",
            f"{type(exc).__name__}: {exc}"[:400]
            + " (the artifact is saved; the ingest pipeline or a retry indexes it)",
        )


_OVER_BUDGET = Indexing(
    "pending", f"indexing took over {SAVE_INDEXING_SECONDS:.0f} s; the ingest pipeline finishes it"
)


def _index(indexes: SaveIndexes, version_id: str, over: Callable[[], bool]) -> Indexing:
    catalog = indexes.catalog
    batch = catalog.version_batch(version_id)
    if batch is None:
        return Indexing("pending", "a later version is current; that one is indexed instead")
    version = batch.version
    if version.processing_state == "failed":
        return Indexing("failed", version.failure_reason or "failed")
    # the document's own bytes (the save just wrote them): extracted again when
    # a retry finds the version extracted already, since chunking needs the blocks
    document = extract(indexes.blobs.get(version.blob_key), version.media_type, version.filename)
    if version.processing_state != "extracted":
        if not catalog.claim_extraction(version_id):
            return Indexing("pending", "the ingest pipeline is extracting it")
        catalog.save_extraction(version_id, document)
    if isinstance(document, ExtractionFailure):
        return Indexing("failed", f"{document.reason.value}: {document.detail}")
    batch = catalog.version_batch(version_id)  # with the title the extraction found
    if batch is None:
        return Indexing("pending", "a later version is current; that one is indexed instead")
    version = batch.version
    embedder = indexes.embedder
    size = token_budget(embedder)
    chunks = StructureAwareChunking(embedder.count_tokens, ChunkingPolicy(max_tokens=size)).chunk(
        document.blocks,
        tenant_id=version.tenant_id,
        source_id=version.source_id,
        version_id=version_id,
    )
    catalog.replace_chunks(version, chunks)
    summary, page = compile_summary(
        SummaryTarget(
            version.tenant_id, version.source_id, version_id, version.title or version.filename
        ),
        [
            RawChunk(c.chunk_id, c.position, c.heading_path, c.body, c.content_hash, c.location)
            for c in chunks
        ],
        indexes.summarizer,
        embedder.count_tokens,
        size,
    )
    catalog.save_summary(version, summary, page)
    if over():
        return _OVER_BUDGET
    batch = catalog.version_batch(version_id)  # both layers, as the indexes take them
    if batch is None:
        return Indexing("pending", "a later version is current; that one is indexed instead")
    try:
        indexes.keywords.upsert(list(batch.chunks))
        catalog.mark_keyword_indexed_many([version_id])
        vectors = _embedded(indexes, batch, over)
    except (
        DocumentRefused
    ) as refused:  # the text's own problem: failed for good, as the stage would
        fail_version(catalog, version, str(refused), StageReport())
        return Indexing("failed", f"unindexable: {refused}")
    if vectors is None:
        return _OVER_BUDGET
    indexes.vectors.upsert(vectors)
    catalog.mark_embedded(version_id, version.tenant_id, indexes.vectors.model.key)
    # publication as publish_ready does it, for this version alone
    indexes.keywords.set_versions_live(version.tenant_id, [version_id], True)
    indexes.vectors.set_versions_live(version.tenant_id, [version_id], True)
    catalog.mark_published_many([version_id], indexes.vectors.model.key)
    retire_superseded(
        catalog, indexes.vectors, indexes.keywords, version.tenant_id, indexes.other_vectors
    )
    return Indexing("indexed")


def _embedded(
    indexes: SaveIndexes, batch: ChunkBatch, over: Callable[[], bool]
) -> list[VectorRecord] | None:
    """Every chunk's vector (reused by content hash when the index has it);
    None when the budget ran out first."""
    known = indexes.vectors.existing_vectors(
        batch.version.tenant_id, sorted({c.content_hash for c in batch.chunks})
    )
    texts = {c.content_hash: c.content for c in batch.chunks}
    missing = sorted(texts.keys() - known.keys())
    for start in range(0, len(missing), EMBED_BATCH):
        if over():
            return None
        part = missing[start : start + EMBED_BATCH]
        known.update(
            zip(part, indexes.embedder.embed_documents([texts[h] for h in part]), strict=True)
        )
    return [VectorRecord(c, known[c.content_hash]) for c in batch.chunks]
