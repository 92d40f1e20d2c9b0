"""Chunks: extracted blocks become structure-aware chunks of the same version."""

from __future__ import annotations

import time
from collections.abc import Callable

from groundwork.catalog import (
    StageProgress,
)
from groundwork.chunking import ChunkingPolicy, chunk_blocks
from groundwork.stages.report import StageReport


def chunk_pending(
    catalog: StageProgress,
    tenant_id: str,
    count_tokens: Callable[[str], int],
    policy: ChunkingPolicy | None = None,
    batch: int = 500,
) -> StageReport:
    report = StageReport()
    started = time.monotonic()
    while pending := catalog.versions_to_chunk(tenant_id, batch):
        for version, document in pending:
            chunks = chunk_blocks(
                document.blocks,
                tenant_id=tenant_id,
                source_id=version.source_id,
                version_id=version.version_id,
                count_tokens=count_tokens,
                policy=policy,
            )
            catalog.replace_chunks(version, chunks)
            report.processed += 1
            report.items += len(chunks)
    report.seconds = time.monotonic() - started
    return report
