"""groundwork.artifact_indexing on the in-memory ports (each passes its
conformance suite): a save indexes its own version and no other; a budget
that runs out answers `pending` and leaves the version where the pipeline
takes it; a store that is down answers `failed` without failing the version,
and a retry finishes it; a store that refuses the text fails the version for
good, as the pipeline's stage would."""

from __future__ import annotations

from collections.abc import Sequence

from groundwork.artifact_indexing import SaveIndexes, index_saved
from groundwork.errors import DocumentRefused, StoreError
from groundwork.ports import IndexedChunk
from groundwork.stages.registration import register_file
from tests.fakes import (
    HashingEmbedder,
    InMemoryBlobStore,
    InMemoryKeywordIndex,
    InMemoryVectorIndex,
)
from tests.fakes_catalog import InMemoryPipelineCatalog

TENANT = "t-index"


class FailingKeywords(InMemoryKeywordIndex):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error: Exception | None = error

    def upsert(self, chunks: Sequence[IndexedChunk]) -> int:
        if self.error is not None:
            raise self.error
        return super().upsert(chunks)


def _world(keywords: InMemoryKeywordIndex | None = None) -> tuple[SaveIndexes, str, str]:
    """The ports, the saved version and another document waiting in the tenant."""
    catalog = InMemoryPipelineCatalog()
    embedder = HashingEmbedder()
    catalog.ensure_tenant(TENANT, TENANT, embedder.model.key)
    blobs = InMemoryBlobStore()
    indexes = SaveIndexes(
        catalog, blobs, keywords or InMemoryKeywordIndex(), InMemoryVectorIndex(), embedder
    )

    def registered(name: str, text: str) -> str:
        outcome = register_file(
            catalog,
            blobs,
            tenant_id=TENANT,
            origin=f"artifact:{name}",
            filename=name,
            data=text.encode(),
            subjects=[f"tenant:{TENANT}"],
            media_type="text/markdown",
        )
        return outcome.version_id  # type: ignore[union-attr]

    other = registered("waiting.md", "# Waiting\n\nAnother document the pipeline will take.\n")
    saved = registered("plan.md", "# Plan\n\n## Goals\n\nShip the heron survey by June.\n")
    return indexes, saved, other


def _state(indexes: SaveIndexes, version_id: str) -> str:
    batch = indexes.catalog.version_batch(version_id)
    assert batch is not None
    return batch.version.processing_state


def _live(indexes: SaveIndexes) -> set[str]:
    return indexes.catalog.live_chunk_ids(TENANT, indexes.vectors.model.key)


def test_a_save_indexes_its_own_version_and_no_other() -> None:
    indexes, saved, other = _world()
    assert index_saved(indexes, saved).state == "indexed"
    live = _live(indexes)
    batch = indexes.catalog.version_batch(saved)
    assert batch is not None and live == {c.chunk_id for c in batch.chunks} != set()
    assert {c.layer for c in batch.chunks} == {"raw", "summary"}  # both layers, one flip
    assert indexes.keywords.chunk_ids(TENANT, live_only=True) == live
    assert indexes.vectors.chunk_ids(TENANT, live_only=True) == live
    assert _state(indexes, other) == "pending"  # the tenant's other work is the pipeline's
    assert index_saved(indexes, saved).state == "indexed"  # again: the same rows, once
    assert _live(indexes) == live


def test_a_budget_that_runs_out_leaves_the_rest_to_the_pipeline() -> None:
    indexes, saved, _ = _world()
    ticks = iter(range(0, 1000, 10))
    answer = index_saved(indexes, saved, budget_seconds=5, clock=lambda: float(next(ticks)))
    assert answer.state == "pending" and "the ingest pipeline finishes it" in (answer.reason or "")
    assert _state(indexes, saved) == "extracted" and _live(indexes) == set()
    work = indexes.catalog.pending_work(TENANT, indexes.vectors.model.key)
    assert work["keyword_index"] == 1 and work["embed"] == 1  # where the pipeline takes it
    assert index_saved(indexes, saved).state == "indexed" and _live(indexes)


def test_a_store_that_is_down_fails_the_save_not_the_version() -> None:
    keywords = FailingKeywords(StoreError("the keyword index is unreachable"))
    indexes, saved, _ = _world(keywords)
    answer = index_saved(indexes, saved)
    assert answer.state == "failed" and "unreachable" in (answer.reason or "")
    assert _state(indexes, saved) == "extracted" and _live(indexes) == set()
    keywords.error = None  # the engine is back
    assert index_saved(indexes, saved).state == "indexed" and _live(indexes)


def test_a_refused_text_fails_the_version_as_the_stage_would() -> None:
    keywords = FailingKeywords(DocumentRefused("a term is over the index's limit"))
    indexes, saved, _ = _world(keywords)
    answer = index_saved(indexes, saved)
    assert answer.state == "failed" and "unindexable" in (answer.reason or "")
    assert _state(indexes, saved) == "failed"
    keywords.error = None
    again = index_saved(indexes, saved)  # for good: a retry says why, and writes nothing
    assert again.state == "failed" and again.reason == "unindexable"
    assert _live(indexes) == set()
