"""The catalog port: sources, immutable versions, extraction results, chunks
and per-model progress. Stage functions in `groundwork.stages` derive their
work from it ("what is stored says what needs doing"), so every stage is
incremental and a rerun finds nothing to do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from groundwork.chunking import Chunk
from groundwork.documents import ExtractedDocument, ExtractionFailure, FailureReason
from groundwork.ports import AccessScope, IndexedChunk
from groundwork.summaries import CompiledSummary, RawChunk
from groundwork.tenancy import (
    NO_LIMITS,
    TENANT_ID,
    ApiKeyInfo,
    Authenticated,
    StorageUsage,
    Tenant,
    TenantDirectory,
    TenantLimits,
    TenantQuotas,
)


@dataclass(frozen=True, slots=True)
class VersionRecord:
    version_id: str
    tenant_id: str
    source_id: str
    version_no: int
    filename: str
    media_type: str
    sha256: str
    size_bytes: int
    blob_key: str
    subjects: tuple[str, ...]
    state: str
    processing_state: str
    title: str | None = None
    failure_reason: str | None = None
    tags: tuple[str, ...] = ()
    created_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class PendingVersion:
    """A version row written `pending` before its bytes: the first step of the write order."""

    version_id: str
    source_id: str
    blob_key: str
    is_new_source: bool


@dataclass(frozen=True, slots=True)
class Unchanged:
    """The source's current version already has these bytes: nothing to do."""

    source_id: str
    version_id: str


@dataclass(frozen=True, slots=True)
class NeedsApproval:
    """The source exists with other content; replacing it needs the caller's
    explicit approval (the previous version stays readable either way)."""

    source_id: str
    current_version_id: str
    current_version_no: int


@dataclass(frozen=True, slots=True)
class ChunkBatch:
    """A version's chunks as the indexes need them."""

    version: VersionRecord
    chunks: tuple[IndexedChunk, ...]


@dataclass(frozen=True, slots=True)
class TenantCounts:
    sources: int
    versions: int
    failed: int
    chunks: int


@dataclass(frozen=True, slots=True)
class TenantWork:
    """A tenant's outstanding work for its serving model (StageProgress.pending_work_all)."""

    tenant_id: str
    model_key: str
    stages: dict[
        str, int
    ]  # extract, chunk, summarize, keyword_index, embed, publish -> versions waiting
    newest_at: float  # epoch seconds of the newest version with work: new work changes it
    #: epoch seconds of the oldest version with work: how long the backlog has waited
    oldest_at: float = 0.0


@runtime_checkable
class RegistrationLedger(Protocol):
    """Versions come into being: `pending` row, bytes, compare-and-set `stored`
    (or `quarantined`); an existing source's other content needs approval."""

    def begin_version(
        self,
        tenant_id: str,
        origin: str,
        filename: str,
        subjects: Sequence[str],
        sha256: str,
        size_bytes: int,
        media_type: str,
        declared_type: str = "",
        replace: bool = True,
        doc_type: str = "file",
        location: tuple[tuple[str, str], ...] = (),
    ) -> PendingVersion | Unchanged | NeedsApproval:
        """Write the `pending` row. With `replace=False` an existing source with
        other content answers NeedsApproval instead of gaining a version.
        `location` (where a connector found the bytes, already bounded) is kept
        on the new version only: the same bytes again are Unchanged, and keep
        the location they were first registered with."""
        ...

    def mark_stored(
        self, version_id: str, scan_result: str | None = None, make_current: bool = True
    ) -> bool:
        """Compare-and-set pending -> stored; make it the source's current version
        (artifacts pass make_current=False and move the pointer in their own commit)."""
        ...

    def mark_quarantined(self, version_id: str, signature: str) -> bool:
        """Compare-and-set pending -> quarantined: never current, never extracted."""
        ...


@dataclass(frozen=True, slots=True)
class VersionShard:
    """One of `count` disjoint slices of a tenant's versions, chosen by a digest
    of the version id (never by position in a listing, which moves as versions
    arrive): a shard run twice, or retried after a crash, takes the versions of
    its slice that still wait, and no other shard ever takes them. The
    PostgreSQL adapter computes the same bucket in SQL (`version_bucket`)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError(f"shard {self.index} of {self.count}")

    def contains(self, version_id: str) -> bool:
        return version_bucket(version_id, self.count) == self.index


def version_bucket(version_id: str, count: int) -> int:
    """The low 31 bits of the first 4 bytes of md5(version id), modulo count."""
    return (int(hashlib.md5(version_id.encode()).hexdigest()[:8], 16) & 0x7FFFFFFF) % count


@runtime_checkable
class StageProgress(Protocol):
    """What each stage still has to do, and the record that it did it:
    extraction, chunking, indexing, embedding, publication and its pointer."""

    def versions_to_extract(
        self, tenant_id: str, limit: int, shard: VersionShard | None = None
    ) -> list[VersionRecord]:
        """Stored current versions of live sources not yet extracted (only
        `shard`'s, when given: a distributed run extracts each slice on its own
        worker)."""
        ...

    def claim_extraction(self, version_id: str) -> bool:
        """Compare-and-set to `extracting` from `pending` or `extracting` (a
        worker that died left its claim); False once extracted or failed."""
        ...

    def save_extraction(
        self, version_id: str, result: ExtractedDocument | ExtractionFailure
    ) -> None: ...

    def versions_to_chunk(
        self, tenant_id: str, limit: int, shard: VersionShard | None = None
    ) -> list[tuple[VersionRecord, ExtractedDocument]]:
        """Extracted versions without chunks (only `shard`'s, when given)."""
        ...

    def replace_chunks(self, version: VersionRecord, chunks: Sequence[Chunk]) -> None:
        """Write a version's chunks beside any other version's (never over the
        published one), drop positions this version no longer has, and mark it
        chunked, in one transaction."""
        ...

    def batches_to_keyword_index(
        self, tenant_id: str, limit: int, shard: VersionShard | None = None
    ) -> list[ChunkBatch]:
        """Summarized versions not yet in the keyword index (only `shard`'s, when given)."""
        ...

    def version_batch(self, version_id: str) -> ChunkBatch | None:
        """One stored version, current for its live source, with its chunks as
        the indexes need them (none before it is chunked); None for any other
        version. What a save that indexes its own version reads: only that one."""
        ...

    def mark_keyword_indexed_many(self, version_ids: Sequence[str]) -> None: ...

    def mark_version_failed(self, version_id: str, reason: FailureReason, detail: str) -> None:
        """Record a failure found after extraction (a store refused the text):
        the version leaves every stage's work and shows the reason."""
        ...

    def batches_to_embed(
        self, tenant_id: str, model_key: str, limit: int, shard: VersionShard | None = None
    ) -> list[ChunkBatch]:
        """Summarized versions without `model_key`'s vectors (only `shard`'s, when given)."""
        ...

    def mark_embedded(self, version_id: str, tenant_id: str, model_key: str) -> None: ...

    def versions_to_publish(self, tenant_id: str, model_key: str) -> list[VersionRecord]: ...

    def mark_published_many(self, version_ids: Sequence[str], model_key: str) -> None:
        """The publication switch, one transaction: each version becomes what its
        source serves for `model_key`; a pointer never moves to an older version."""
        ...

    def superseded_versions(self, tenant_id: str, model_key: str | None) -> list[str]:
        """Versions still holding chunk rows that are neither current nor
        published for `model_key` (any model when None): their index rows may go."""
        ...

    def drop_version_chunks(
        self, tenant_id: str, version_ids: Sequence[str], grace_seconds: float
    ) -> int:
        """Delete these versions' chunk rows (after their index rows are gone),
        except a version a pointer left less than `grace_seconds` ago."""
        ...

    def live_chunk_ids(self, tenant_id: str, model_key: str | None) -> set[str]:
        """Chunk ids the catalog says are published for this model (any model when None)."""
        ...

    def pending_work(self, tenant_id: str, model_key: str) -> dict[str, int]: ...

    def pending_work_all(self) -> list[TenantWork]:
        """Every tenant with work outstanding for its serving model, with the same
        counts as `pending_work`, in one read: a sensor tick at a thousand
        tenants must not ask each of them (nor count their chunks)."""
        ...

    def oldest_unpublished_seconds(self, tenant_id: str, model_key: str) -> float:
        """Age of the oldest current version still waiting to be searchable (0: none)."""
        ...

    def publication_latency(
        self, tenant_id: str, model_key: str, since_seconds: float = 3600
    ) -> list[float]:
        """Seconds from registration to publication, for versions published recently."""
        ...

    def counts(self, tenant_id: str) -> TenantCounts: ...


@dataclass(frozen=True, slots=True)
class SummaryDrift:
    """A compiled summary whose version's raw chunks are no longer those it was
    compiled from (their digest differs from the one recorded)."""

    version_id: str
    source_id: str
    recorded_digest: str
    current_digest: str


@runtime_checkable
class SummaryLedger(Protocol):
    """The summary layer's progress and records. A version's summary page is
    compiled after its raw chunks and before the indexes take the version, so
    both layers of a version are indexed and published together; its chunks
    are rows of the same version (layer `summary`), so deletion, erasure,
    re-scoping and the publication pointer treat them as the raw chunks."""

    def versions_to_summarize(
        self, tenant_id: str, limit: int, shard: VersionShard | None = None
    ) -> list[tuple[VersionRecord, list[RawChunk]]]:
        """Current, chunked versions of live sources without a summary, or whose
        summary was marked for recompilation, with their raw chunks in order
        (only `shard`'s, when given)."""
        ...

    def save_summary(
        self, version: VersionRecord, summary: CompiledSummary, chunks: Sequence[Chunk]
    ) -> None:
        """In one transaction: the version's summary chunks (replacing any it had),
        the compilation record, and the version marked summarized. A version the
        indexes already took (a recompilation) goes through them again: its
        keyword and per-model progress are cleared, while its published pointer
        stays, so it is served as it was until the indexes hold the new page."""
        ...

    def summary_drift(self, tenant_id: str) -> list[SummaryDrift]:
        """Summaries of current versions not yet marked stale whose raw chunks'
        digest differs from the one recorded at compilation."""
        ...

    def mark_summaries_stale(self, tenant_id: str, version_ids: Sequence[str], reason: str) -> int:
        """Mark these versions' summaries for recompilation (the summary stage's
        work again); return how many were marked."""
        ...

    def compiled_summary_count(self, tenant_id: str) -> int:
        """Compiled summaries of the current versions of live sources, marked
        stale or not: the denominator of the drift rate."""
        ...

    def compiled_summaries(
        self, scope: AccessScope, source_ids: Sequence[str]
    ) -> dict[str, CompiledSummary]:
        """The compiled summary (with its text) of the version each source
        publishes for the tenant's serving model, for sources the scope may
        read; a source without one is absent."""
        ...


@runtime_checkable
class SourceReading(Protocol):
    """A source as a scope may see it: whether anything is visible, its
    processing state, and what extraction produced (hidden = absent)."""

    def has_accessible_sources(self, scope: AccessScope) -> bool: ...

    def source_status(self, scope: AccessScope, source_id: str) -> dict[str, object] | None: ...

    def current_extraction(
        self, scope: AccessScope, source_id: str, version_no: int | None = None
    ) -> tuple[str, ExtractedDocument | ExtractionFailure | None] | None:
        """(version id, extraction) of the current version, or of `version_no`."""
        ...


@runtime_checkable
class LifecycleLedger(Protocol):
    """Deletion (mark, purge, tombstones), re-scoping and tags, tenant
    erasure, model switches, and the folder connector's mirror."""

    def mark_source_deleting(self, tenant_id: str, source_id: str) -> bool:
        """First step of deletion, a compare-and-set on a live source of the
        tenant: from here it is no stage's work and serves nothing, and a
        version of it still pending can no longer be stored."""
        ...

    def sources_marked_for_deletion(
        self, tenant_id: str | None = None
    ) -> list[tuple[str, str]]: ...

    def source_chunk_ids(self, source_id: str) -> list[str]: ...

    def blob_keys_only_used_by(self, source_id: str) -> list[str]:
        """The source's blobs that no other pending or stored version (of any
        tenant: blobs are content-addressed) nor live artifact uses."""
        ...

    def finish_deletion(
        self, tenant_id: str, source_id: str, tombstones: Sequence[tuple[str, str]]
    ) -> None:
        """Record (chunk or blob id, store) tombstones, drop the source's chunks,
        extractions and progress, keep its rows (citations name them) marked
        deleted; registering the origin again revives the same source."""
        ...

    def tombstoned_chunk_ids(self, tenant_id: str) -> set[str]:
        """Chunk ids the catalog's own tombstones name (no chunk row has them)."""
        ...

    def set_source_subjects(
        self, tenant_id: str, source_id: str, subjects: Sequence[str]
    ) -> bool: ...

    def tenant_blob_keys(self, tenant_id: str) -> list[str]:
        """Blobs the tenant's versions reference and no other tenant's do."""
        ...

    def erase_tenant_rows(self, tenant_id: str) -> None: ...

    def switch_serving_model(self, tenant_id: str, model_key: str, expected_current: str) -> bool:
        """Compare-and-set on the tenant's serving model; the model left becomes
        the previous one (rollback is the same switch back)."""
        ...

    def previous_model(self, tenant_id: str) -> str | None: ...

    def models_to_retire(self, tenant_id: str, grace_seconds: float) -> list[str]:
        """The previous model, once the switch away from it is `grace_seconds` old."""
        ...

    def forget_model(self, tenant_id: str, model_key: str) -> None:
        """The tenant's progress and publication pointers for the model go (its
        versions are to embed again, nothing is live for it, a version only it
        served is superseded), and it is no longer the previous model."""
        ...

    def set_source_tags(self, tenant_id: str, source_id: str, tags: Sequence[str]) -> bool:
        """Tags of a live source of the tenant, deduplicated and sorted."""
        ...

    def relocate_source(
        self, tenant_id: str, source_id: str, filename: str, location: Mapping[str, str]
    ) -> bool:
        """A live source of the tenant found elsewhere with the same bytes (a
        connector's move or rename): its filename, and the place its current
        version's citations name, become the new ones. No new version: the
        bytes did not change, so nothing is extracted or embedded again, but a
        citation must not keep naming a path the file has left."""
        ...

    def inbox_sources(self, tenant_id: str) -> dict[str, tuple[str, tuple[str, ...]]]:
        """origin -> (source id, subjects) of the tenant's live inbox sources."""
        ...

    def record_inbox_scan(self, tenant_id: str, fingerprint: str, rescan_wanted: bool) -> None:
        """What the tenant's last registration walked (the folder's fingerprint,
        groundwork.connectors.inbox) and whether it left files to try again
        (refused by a quota that may allow them later): the hourly rescan asks
        for a run only when the folder differs, or such files wait."""
        ...

    def inbox_scans(self, tenant_ids: Sequence[str]) -> dict[str, tuple[str, bool]]:
        """tenant -> (fingerprint, rescan wanted) of the tenants' last recorded scans."""
        ...


@runtime_checkable
class Catalog(
    TenantDirectory,
    RegistrationLedger,
    StageProgress,
    SummaryLedger,
    SourceReading,
    LifecycleLedger,
    Protocol,
):
    """The whole catalog, for the composition root and the pipeline; services
    and stages should ask for the narrowest part they use."""


__all__ = [
    "ApiKeyInfo",
    "Authenticated",
    "NO_LIMITS",
    "StorageUsage",
    "TENANT_ID",
    "Tenant",
    "TenantDirectory",
    "TenantLimits",
    "TenantQuotas",
]
