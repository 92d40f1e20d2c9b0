"""What a stage reports (Dagster metadata), and the one way a stage fails a single version."""

from __future__ import annotations

from dataclasses import dataclass, field

from groundwork.catalog import (
    StageProgress,
    VersionRecord,
)
from groundwork.documents import (
    FailureReason,
)


@dataclass(slots=True)
class StageReport:
    """Counts and timings a stage reports (shown as Dagster metadata)."""

    processed: int = 0
    skipped: int = 0
    failed: int = 0
    items: int = 0  # chunks, vectors or documents written
    reused: int = 0  # embeddings reused from the cache
    seconds: float = 0.0
    failures: dict[str, str] = field(default_factory=dict)

    def as_metadata(self) -> dict[str, float | int]:
        return {
            "processed": self.processed,
            "skipped": self.skipped,
            "failed": self.failed,
            "items_written": self.items,
            "embeddings_reused": self.reused,
            "seconds": round(self.seconds, 3),
        }


def fail_version(
    catalog: StageProgress, version: VersionRecord, detail: str, report: StageReport
) -> None:
    """A store refused this version's text: record it on the version (it leaves
    every stage's work) so the rest of the tenant goes on."""
    catalog.mark_version_failed(version.version_id, FailureReason.UNINDEXABLE, detail)
    report.failed += 1
    report.failures[version.filename] = FailureReason.UNINDEXABLE.value
