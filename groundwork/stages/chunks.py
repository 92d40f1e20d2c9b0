"""Chunks: extracted blocks become structure-aware chunks of the same version."""

from __future__ import annotations

import time
from collections.abc import Callable

from groundwork.catalog import (
    StageProgress,
    VersionShard,
)
from groundwork.chunking import ChunkingPolicy, ChunkingStrategy, StructureAwareChunking
from groundwork.stages.report import StageReport


def chunk_pending(
    catalog: StageProgress,
    tenant_id: str,
    count_tokens: Callable[[str], int],
    policy: ChunkingPolicy | None = None,
    batch: int = 500,
    strategy: ChunkingStrategy | None = None,
    shard: VersionShard | None = None,
) -> StageReport:
    """Chunk the tenant's extracted versions with `strategy` (the structure-aware
    one sized by `count_tokens` and `policy` unless another is given); only
    `shard`'s slice when given."""
    strategy = strategy or StructureAwareChunking(count_tokens, policy or ChunkingPolicy())
    report = StageReport()
    started = time.monotonic()
    while pending := catalog.versions_to_chunk(tenant_id, batch, shard):
        for version, document in pending:
            chunks = strategy.chunk(
                document.blocks,
                tenant_id=tenant_id,
                source_id=version.source_id,
                version_id=version.version_id,
            )
            catalog.replace_chunks(version, chunks)
            report.processed += 1
            report.items += len(chunks)
    report.seconds = time.monotonic() - started
    return report
