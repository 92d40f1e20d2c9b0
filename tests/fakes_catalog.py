"""An in-memory catalog for the pipeline's side of the ports: tenants and
keys, registration, stage progress and lifecycle in one object, because a
version registered through one part is the work of the next (the PostgreSQL
catalog is one set of tables behind the same parts).

It passes the same conformance suites as PostgresCatalog
(tests/conformance/test_tenant_directory.py, test_registration_ledger.py,
test_stage_progress.py, test_lifecycle_ledger.py), so a fast test of stage or
lifecycle logic against it means what it says."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from groundwork.catalog import (
    ChunkBatch,
    LifecycleLedger,
    NeedsApproval,
    PendingVersion,
    RegistrationLedger,
    StageProgress,
    SummaryDrift,
    SummaryLedger,
    TenantCounts,
    TenantDirectory,
    TenantWork,
    Unchanged,
    VersionRecord,
    VersionShard,
)
from groundwork.chunking import Chunk
from groundwork.documents import ExtractedDocument, ExtractionFailure, FailureReason
from groundwork.errors import InvalidRequest
from groundwork.ports import AccessScope, IndexedChunk
from groundwork.summaries import CompiledSummary, RawChunk, raw_digest
from tests.fakes import InMemoryRegistrationLedger, InMemoryTenantDirectory


@dataclass(slots=True)
class _Source:
    """What the registration ledger does not keep about a source."""

    tenant_id: str
    origin: str
    filename: str
    subjects: tuple[str, ...]
    tags: tuple[str, ...] = ()
    state: str = "active"  # active | deleting | deleted
    updated_at: float = 0.0


@dataclass(slots=True)
class _Version:
    """What the registration ledger does not keep about a version: its
    description and each stage's progress (None: not done)."""

    tenant_id: str
    source_id: str
    media_type: str
    size_bytes: int
    blob_key: str
    created_at: float
    processing_state: str = "pending"  # pending | extracting | extracted | failed
    title: str | None = None
    failure_reason: str | None = None
    failure_detail: str | None = None
    document: ExtractedDocument | None = None
    extracted_at: float | None = None
    chunked_at: float | None = None
    summarized_at: float | None = None
    keyword_indexed_at: float | None = None


@dataclass(slots=True)
class _ModelProgress:
    tenant_id: str
    embedded_at: float | None = None
    published_at: float | None = None


@dataclass(slots=True)
class _Pointer:
    """Which version a source serves for a model, and the one it just left."""

    tenant_id: str
    version_id: str
    previous_version_id: str | None
    published_at: float


class InMemoryPipelineCatalog(InMemoryTenantDirectory, InMemoryRegistrationLedger):
    """TenantDirectory, RegistrationLedger, StageProgress and LifecycleLedger
    over dicts. Registration is InMemoryRegistrationLedger's (its source and
    version lists stay the truth for origin, kind, number, hash, state and the
    current pointer); this class keeps the rest beside them, keyed by the same
    ids. `clock` gives epoch seconds, so a test can step over a grace period."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        InMemoryTenantDirectory.__init__(self)
        InMemoryRegistrationLedger.__init__(self)
        # one re-entrant lock for the whole catalog: begin_version holds it
        # around the registration ledger's own, as one Postgres transaction does
        self._lock = threading.RLock()  # type: ignore[assignment]
        self._clock = clock
        self._last_created = 0.0
        self._source_rows: dict[str, _Source] = {}
        self._version_rows: dict[str, _Version] = {}
        self._chunks: dict[str, Chunk] = {}
        self._progress: dict[tuple[str, str], _ModelProgress] = {}  # (version, model)
        self._pointers: dict[tuple[str, str], _Pointer] = {}  # (source, model)
        self._tombstones: set[tuple[str, str, str, str]] = set()  # tenant, source, chunk, store
        self._serving: dict[str, tuple[str | None, float]] = {}  # tenant -> previous, switched at
        self._summaries: dict[str, CompiledSummary] = {}  # version -> compilation record
        self._inbox_scans: dict[str, tuple[str, bool]] = {}  # tenant -> fingerprint, wanted

    # the registration ledger's records -------------------------------------------------
    def _current(self, source_id: str) -> str | None:
        source = self._source_rows[source_id]
        current: str | None = self._sources[(source.tenant_id, source.origin)][2]
        return current

    def _state(self, version_id: str) -> str:
        state: str = self._versions[version_id][3]
        return state

    def _version_no(self, version_id: str) -> int:
        number: int = self._versions[version_id][1]
        return number

    def _record(self, version_id: str) -> VersionRecord:
        version = self._version_rows[version_id]
        source = self._source_rows[version.source_id]
        return VersionRecord(
            version_id=version_id,
            tenant_id=version.tenant_id,
            source_id=version.source_id,
            version_no=self._version_no(version_id),
            filename=source.filename,
            media_type=version.media_type,
            sha256=self._versions[version_id][2],
            size_bytes=version.size_bytes,
            blob_key=version.blob_key,
            subjects=source.subjects,
            state=self._state(version_id),
            processing_state=version.processing_state,
            title=version.title,
            failure_reason=version.failure_reason,
            tags=source.tags,
            created_at=datetime.fromtimestamp(version.created_at, UTC),
        )

    def _is_live_current(self, version_id: str) -> bool:
        """The version its live source serves as current: the only one stages work on."""
        version = self._version_rows[version_id]
        return (
            self._source_rows[version.source_id].state == "active"
            and self._current(version.source_id) == version_id
        )

    def _listed(self, tenant_id: str, wanted: Callable[[str, _Version], bool]) -> list[str]:
        """Version ids of the tenant in registration order (created, then id)."""
        return sorted(
            (
                version_id
                for version_id, version in self._version_rows.items()
                if version.tenant_id == tenant_id and wanted(version_id, version)
            ),
            key=lambda v: (self._version_rows[v].created_at, v),
        )

    # registration, extended with what the other parts need --------------------------------
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
        with self._lock:
            known = self._sources.get((tenant_id, origin))
            if known is not None and known[1] == doc_type:
                source = self._source_rows[known[0]]
                if source.state == "deleting":
                    raise InvalidRequest(
                        f"{origin} is being deleted; register it again once the deletion completes"
                    )
                if source.state == "deleted":
                    # a deleted source comes back with the subjects of its new upload
                    source.state, source.subjects = "active", tuple(subjects)
                    source.updated_at = self._clock()
            begun = super().begin_version(
                tenant_id,
                origin,
                filename,
                subjects,
                sha256,
                size_bytes,
                media_type,
                declared_type,
                replace,
                doc_type,
                location,
            )
            if isinstance(begun, PendingVersion):
                if begun.is_new_source:
                    self._source_rows[begun.source_id] = _Source(
                        tenant_id, origin, filename, tuple(subjects), updated_at=self._clock()
                    )
                # strictly increasing, so registration order is the listing order
                created = max(self._clock(), self._last_created + 1e-6)
                self._last_created = created
                self._version_rows[begun.version_id] = _Version(
                    tenant_id, begun.source_id, media_type, size_bytes, begun.blob_key, created
                )
            return begun

    # StageProgress: extraction ------------------------------------------------------------
    def versions_to_extract(
        self, tenant_id: str, limit: int, shard: VersionShard | None = None
    ) -> list[VersionRecord]:
        with self._lock:
            return [
                self._record(v)
                for v in self._listed(
                    tenant_id,
                    lambda v, row: (
                        (shard is None or shard.contains(v))
                        and self._state(v) == "stored"
                        and self._is_live_current(v)
                        and (
                            row.processing_state == "pending"
                            or (row.processing_state == "extracting" and row.extracted_at is None)
                        )
                    ),
                )[:limit]
            ]

    def claim_extraction(self, version_id: str) -> bool:
        # 'extracting' may be claimed again: a worker that died left it there
        with self._lock:
            version = self._version_rows.get(version_id)
            if version is None or version.processing_state not in ("pending", "extracting"):
                return False
            version.processing_state = "extracting"
            return True

    def save_extraction(
        self, version_id: str, result: ExtractedDocument | ExtractionFailure
    ) -> None:
        with self._lock:
            version = self._version_rows.get(version_id)
            if version is None:
                return
            version.extracted_at = self._clock()
            if isinstance(result, ExtractionFailure):
                version.processing_state = "failed"
                version.failure_reason, version.failure_detail = result.reason.value, result.detail
                return
            # stored as the database stores it: a copy through its dictionary form
            version.document = ExtractedDocument.from_dict(result.to_dict())
            version.processing_state, version.title = "extracted", result.title
            version.failure_reason = version.failure_detail = None

    def mark_version_failed(self, version_id: str, reason: FailureReason, detail: str) -> None:
        with self._lock:
            version = self._version_rows.get(version_id)
            if version is not None:
                version.processing_state = "failed"
                version.failure_reason, version.failure_detail = reason.value, detail[:2000]

    # chunking --------------------------------------------------------------------------------
    def versions_to_chunk(
        self, tenant_id: str, limit: int, shard: VersionShard | None = None
    ) -> list[tuple[VersionRecord, ExtractedDocument]]:
        with self._lock:
            ready = self._listed(
                tenant_id,
                lambda v, row: (
                    (shard is None or shard.contains(v))
                    and row.processing_state == "extracted"
                    and row.chunked_at is None
                    and row.document is not None
                    and self._is_live_current(v)
                ),
            )[:limit]
            return [(self._record(v), self._document(v)) for v in ready]

    def _document(self, version_id: str) -> ExtractedDocument:
        document = self._version_rows[version_id].document
        assert document is not None
        return document

    def _replace_layer(self, version_id: str, layer: str, chunks: Sequence[Chunk]) -> None:
        """Store a version's chunks of one layer; drop only that version's rows of
        that layer past the new length (other versions and layers stay). Caller
        holds the lock."""
        for chunk in chunks:
            self._chunks[chunk.chunk_id] = chunk
        for chunk_id, chunk in list(self._chunks.items()):
            if (
                chunk.version_id == version_id
                and chunk.layer == layer
                and chunk.position >= len(chunks)
            ):
                del self._chunks[chunk_id]

    def replace_chunks(self, version: VersionRecord, chunks: Sequence[Chunk]) -> None:
        with self._lock:
            self._replace_layer(version.version_id, "raw", chunks)
            row = self._version_rows.get(version.version_id)
            if row is not None:
                row.chunked_at = self._clock()

    # indexes ---------------------------------------------------------------------------------
    def _batches(self, version_ids: Sequence[str]) -> list[ChunkBatch]:
        batches = []
        for version_id in version_ids:
            version = self._record(version_id)
            rows = sorted(
                (
                    c
                    for c in self._chunks.values()
                    if c.source_id == version.source_id and c.version_id == version_id
                ),
                key=lambda c: (c.layer, c.position),
            )
            source = self._source_rows[version.source_id]
            doc_type = self._sources[(source.tenant_id, source.origin)][1]
            indexed = tuple(
                IndexedChunk(
                    chunk_id=c.chunk_id,
                    tenant_id=version.tenant_id,
                    source_id=version.source_id,
                    version_id=version_id,
                    subjects=version.subjects,
                    media_type=version.media_type,
                    title=version.title or version.filename,
                    content=c.content,
                    content_hash=c.content_hash,
                    tags=version.tags,
                    source_date=version.created_at,
                    layer="summary" if c.layer == "summary" else "raw",
                    document_type="artifact" if doc_type == "artifact" else "source",
                )
                for c in rows
            )
            batches.append(ChunkBatch(version, indexed))
        return batches

    def batches_to_keyword_index(
        self, tenant_id: str, limit: int, shard: VersionShard | None = None
    ) -> list[ChunkBatch]:
        with self._lock:
            return self._batches(
                self._listed(
                    tenant_id,
                    lambda v, row: (
                        (shard is None or shard.contains(v))
                        and row.summarized_at is not None
                        and row.keyword_indexed_at is None
                        and row.processing_state == "extracted"
                        and self._is_live_current(v)
                    ),
                )[:limit]
            )

    def version_batch(self, version_id: str) -> ChunkBatch | None:
        with self._lock:
            row = self._version_rows.get(version_id)
            stored = row is not None and self._state(version_id) == "stored"
            if not stored or not self._is_live_current(version_id):
                return None
            return self._batches([version_id])[0]

    def mark_keyword_indexed_many(self, version_ids: Sequence[str]) -> None:
        with self._lock:
            now = self._clock()
            for version_id in version_ids:
                if version_id in self._version_rows:
                    self._version_rows[version_id].keyword_indexed_at = now

    def _embedded(self, version_id: str, model_key: str) -> bool:
        progress = self._progress.get((version_id, model_key))
        return progress is not None and progress.embedded_at is not None

    def batches_to_embed(
        self, tenant_id: str, model_key: str, limit: int, shard: VersionShard | None = None
    ) -> list[ChunkBatch]:
        with self._lock:
            return self._batches(
                self._listed(
                    tenant_id,
                    lambda v, row: (
                        (shard is None or shard.contains(v))
                        and row.summarized_at is not None
                        and row.processing_state == "extracted"
                        and self._is_live_current(v)
                        and not self._embedded(v, model_key)
                    ),
                )[:limit]
            )

    def mark_embedded(self, version_id: str, tenant_id: str, model_key: str) -> None:
        with self._lock:
            progress = self._progress.setdefault((version_id, model_key), _ModelProgress(tenant_id))
            progress.embedded_at = self._clock()

    def versions_to_publish(self, tenant_id: str, model_key: str) -> list[VersionRecord]:
        def ready(version_id: str, row: _Version) -> bool:
            progress = self._progress.get((version_id, model_key))
            return (
                self._is_live_current(version_id)
                and row.keyword_indexed_at is not None
                and progress is not None
                and progress.embedded_at is not None
                and progress.published_at is None
                and row.processing_state == "extracted"
            )

        with self._lock:
            return [self._record(v) for v in self._listed(tenant_id, ready)]

    def mark_published_many(self, version_ids: Sequence[str], model_key: str) -> None:
        with self._lock:
            now = self._clock()
            for version_id in sorted(version_ids):
                progress = self._progress.get((version_id, model_key))
                if progress is not None:
                    progress.published_at = now
            for version_id in sorted(version_ids):
                row = self._version_rows.get(version_id)
                if row is None:
                    continue
                key = (row.source_id, model_key)
                pointer = self._pointers.get(key)
                if pointer is None:
                    self._pointers[key] = _Pointer(row.tenant_id, version_id, None, now)
                elif self._version_no(pointer.version_id) <= self._version_no(version_id):
                    # never back to an older version; the one it leaves keeps a grace period
                    if pointer.version_id != version_id:
                        pointer.previous_version_id = pointer.version_id
                    pointer.version_id, pointer.published_at = version_id, now

    # SummaryLedger -------------------------------------------------------------------------
    def _raw_rows(self, version_id: str) -> list[Chunk]:
        return sorted(
            (c for c in self._chunks.values() if c.version_id == version_id and c.layer == "raw"),
            key=lambda c: c.position,
        )

    def versions_to_summarize(
        self, tenant_id: str, limit: int, shard: VersionShard | None = None
    ) -> list[tuple[VersionRecord, list[RawChunk]]]:
        with self._lock:
            ready = self._listed(
                tenant_id,
                lambda v, row: (
                    (shard is None or shard.contains(v))
                    and row.processing_state == "extracted"
                    and row.chunked_at is not None
                    and row.summarized_at is None
                    and self._is_live_current(v)
                ),
            )[:limit]
            return [
                (
                    self._record(v),
                    [
                        RawChunk(
                            c.chunk_id,
                            c.position,
                            c.heading_path,
                            c.body,
                            c.content_hash,
                            c.location,
                        )
                        for c in self._raw_rows(v)
                    ],
                )
                for v in ready
            ]

    def save_summary(
        self, version: VersionRecord, summary: CompiledSummary, chunks: Sequence[Chunk]
    ) -> None:
        with self._lock:
            self._replace_layer(version.version_id, "summary", chunks)
            self._summaries[version.version_id] = replace(summary, text="", stale=False)
            row = self._version_rows.get(version.version_id)
            if row is not None:
                row.summarized_at = self._clock()
                row.keyword_indexed_at = None
            for (version_id, _), progress in self._progress.items():
                if version_id == version.version_id:
                    progress.embedded_at = progress.published_at = None

    def summary_drift(self, tenant_id: str) -> list[SummaryDrift]:
        with self._lock:
            found = []
            for version_id, summary in sorted(self._summaries.items()):
                row = self._version_rows.get(version_id)
                if (
                    row is None
                    or row.tenant_id != tenant_id
                    or summary.stale
                    or row.summarized_at is None
                    or not self._is_live_current(version_id)
                ):
                    continue
                current = raw_digest(
                    (c.chunk_id, c.content_hash) for c in self._raw_rows(version_id)
                )
                if current != summary.raw_digest:
                    found.append(
                        SummaryDrift(version_id, summary.source_id, summary.raw_digest, current)
                    )
            return found

    def mark_summaries_stale(self, tenant_id: str, version_ids: Sequence[str], reason: str) -> int:
        with self._lock:
            marked = 0
            for version_id in version_ids:
                summary = self._summaries.get(version_id)
                row = self._version_rows.get(version_id)
                if summary is None or row is None or row.tenant_id != tenant_id:
                    continue
                if not summary.stale:
                    self._summaries[version_id] = replace(summary, stale=True)
                    marked += 1
                row.summarized_at = None
            return marked

    def compiled_summary_count(self, tenant_id: str) -> int:
        with self._lock:
            return sum(
                1
                for version_id in self._summaries
                if (row := self._version_rows.get(version_id)) is not None
                and row.tenant_id == tenant_id
                and self._is_live_current(version_id)
            )

    def compiled_summaries(
        self, scope: AccessScope, source_ids: Sequence[str]
    ) -> dict[str, CompiledSummary]:
        if not scope.subjects:
            return {}
        with self._lock:
            tenant = self.get_tenant(scope.tenant_id)
            found: dict[str, CompiledSummary] = {}
            for source_id in source_ids:
                source = self._source_rows.get(source_id)
                if (
                    tenant is None
                    or source is None
                    or source.tenant_id != scope.tenant_id
                    or source.state != "active"
                    or not set(source.subjects) & set(scope.subjects)
                ):
                    continue
                pointer = self._pointers.get((source_id, tenant.active_model))
                summary = self._summaries.get(pointer.version_id) if pointer else None
                if pointer is None or summary is None:
                    continue
                pages = sorted(
                    (
                        c
                        for c in self._chunks.values()
                        if c.version_id == pointer.version_id and c.layer == "summary"
                    ),
                    key=lambda c: c.position,
                )
                title = self._record(pointer.version_id)
                found[source_id] = replace(
                    summary,
                    title=title.title or title.filename,
                    text=" ".join(c.body for c in pages),
                    media_type=title.media_type,
                )
            return found

    def _published(self, version_id: str, model_key: str | None) -> bool:
        return any(
            p.version_id == version_id and (model_key is None or model == model_key)
            for (_, model), p in self._pointers.items()
        )

    def superseded_versions(self, tenant_id: str, model_key: str | None) -> list[str]:
        with self._lock:
            return sorted(
                {
                    c.version_id
                    for c in self._chunks.values()
                    if c.tenant_id == tenant_id
                    and self._source_rows[c.source_id].state == "active"
                    and c.version_id != self._current(c.source_id)
                    and not self._published(c.version_id, model_key)
                }
            )

    def drop_version_chunks(
        self, tenant_id: str, version_ids: Sequence[str], grace_seconds: float
    ) -> int:
        with self._lock:
            cutoff = self._clock() - grace_seconds
            # a version a pointer left within the grace keeps its rows
            kept = {
                p.previous_version_id for p in self._pointers.values() if p.published_at > cutoff
            }
            doomed = [
                chunk_id
                for chunk_id, c in self._chunks.items()
                if c.tenant_id == tenant_id
                and c.version_id in version_ids
                and c.version_id not in kept
            ]
            for chunk_id in doomed:
                del self._chunks[chunk_id]
            return len(doomed)

    def live_chunk_ids(self, tenant_id: str, model_key: str | None) -> set[str]:
        with self._lock:
            return {
                c.chunk_id
                for c in self._chunks.values()
                if c.tenant_id == tenant_id
                and self._source_rows[c.source_id].state == "active"
                and self._published(c.version_id, model_key)
            }

    def _stages(self, version_id: str, model_key: str) -> dict[str, bool]:
        """Which stages this version still waits on for `model_key` (one rule for
        the per-tenant count and the all-tenants read)."""
        row = self._version_rows[version_id]
        progress = self._progress.get((version_id, model_key))
        extracted = row.processing_state == "extracted"
        chunked = extracted and row.chunked_at is not None
        summarized = extracted and row.summarized_at is not None
        return {
            "extract": row.processing_state in ("pending", "extracting"),
            "chunk": extracted and row.chunked_at is None,
            "summarize": chunked and row.summarized_at is None,
            "keyword_index": summarized and row.keyword_indexed_at is None,
            "embed": summarized and (progress is None or progress.embedded_at is None),
            "publish": extracted and (progress is None or progress.published_at is None),
        }

    def _current_versions(self, tenant_id: str) -> list[str]:
        return self._listed(
            tenant_id, lambda v, _: self._state(v) == "stored" and self._is_live_current(v)
        )

    def pending_work(self, tenant_id: str, model_key: str) -> dict[str, int]:
        work = dict.fromkeys(
            ("extract", "chunk", "summarize", "keyword_index", "embed", "publish"), 0
        )
        with self._lock:
            for version_id in self._current_versions(tenant_id):
                for stage, waits in self._stages(version_id, model_key).items():
                    work[stage] += waits
        return work

    def pending_work_all(self) -> list[TenantWork]:
        found: list[TenantWork] = []
        for tenant in self.list_tenants():
            work = self.pending_work(tenant.tenant_id, tenant.active_model)
            if not any(work.values()):
                continue
            with self._lock:
                waiting = [
                    self._version_rows[v].created_at
                    for v in self._current_versions(tenant.tenant_id)
                    if any(self._stages(v, tenant.active_model).values())
                ]
            found.append(
                TenantWork(tenant.tenant_id, tenant.active_model, work, max(waiting), min(waiting))
            )
        return found

    def oldest_unpublished_seconds(self, tenant_id: str, model_key: str) -> float:
        with self._lock:
            now = self._clock()
            waiting = [
                now - self._version_rows[v].created_at
                for v in self._listed(
                    tenant_id,
                    lambda v, row: (
                        self._state(v) == "stored"
                        and self._is_live_current(v)
                        and row.processing_state != "failed"
                        and not self._published(v, model_key)
                    ),
                )
            ]
        return max(waiting, default=0.0)

    def publication_latency(
        self, tenant_id: str, model_key: str, since_seconds: float = 3600
    ) -> list[float]:
        with self._lock:
            cutoff = self._clock() - since_seconds
            return [
                progress.published_at - self._version_rows[version_id].created_at
                for (version_id, model), progress in self._progress.items()
                if progress.tenant_id == tenant_id
                and model == model_key
                and progress.published_at is not None
                and progress.published_at > cutoff
            ]

    def counts(self, tenant_id: str) -> TenantCounts:
        with self._lock:
            versions = [v for v in self._version_rows.values() if v.tenant_id == tenant_id]
            return TenantCounts(
                sources=sum(
                    1
                    for s in self._source_rows.values()
                    if s.tenant_id == tenant_id and s.state == "active"
                ),
                versions=len(versions),
                failed=sum(1 for v in versions if v.processing_state == "failed"),
                chunks=sum(
                    1
                    for c in self._chunks.values()
                    if c.tenant_id == tenant_id and c.layer == "raw"
                ),
            )

    # LifecycleLedger: deletion ------------------------------------------------------------
    def mark_source_deleting(self, tenant_id: str, source_id: str) -> bool:
        with self._lock:
            source = self._source_rows.get(source_id)
            if source is None or source.tenant_id != tenant_id or source.state != "active":
                return False
            source.state, source.updated_at = "deleting", self._clock()
            # a version still pending with it can no longer be stored
            for version_id, version in self._version_rows.items():
                if version.source_id == source_id and self._state(version_id) != "deleted":
                    self._versions[version_id][3] = "deleting"
            return True

    def sources_marked_for_deletion(self, tenant_id: str | None = None) -> list[tuple[str, str]]:
        with self._lock:
            marked = sorted(
                (s.updated_at, s.tenant_id, source_id)
                for source_id, s in self._source_rows.items()
                if s.state == "deleting" and tenant_id in (None, s.tenant_id)
            )
        return [(tenant, source_id) for _, tenant, source_id in marked]

    def source_chunk_ids(self, source_id: str) -> list[str]:
        with self._lock:
            return [c.chunk_id for c in self._chunks.values() if c.source_id == source_id]

    def blob_keys_only_used_by(self, source_id: str) -> list[str]:
        """This fake holds no artifacts: a source's blobs are its versions'."""
        with self._lock:
            mine = {v.blob_key for v in self._version_rows.values() if v.source_id == source_id}
            elsewhere = {
                v.blob_key
                for version_id, v in self._version_rows.items()
                if v.source_id != source_id and self._state(version_id) in ("pending", "stored")
            }
            return sorted(mine - elsewhere)

    def finish_deletion(
        self, tenant_id: str, source_id: str, tombstones: Sequence[tuple[str, str]]
    ) -> None:
        with self._lock:
            self._tombstones |= {
                (tenant_id, source_id, chunk_id, store) for chunk_id, store in tombstones
            }
            for chunk_id in self.source_chunk_ids(source_id):
                del self._chunks[chunk_id]
            mine = {v for v, row in self._version_rows.items() if row.source_id == source_id}
            for key in [k for k in self._progress if k[0] in mine]:
                del self._progress[key]
            for version_id in mine:
                # the summary layer's records go with its chunks
                self._summaries.pop(version_id, None)
                self._version_rows[version_id].summarized_at = None
            for version_id in mine:
                row = self._version_rows[version_id]
                # erasure: the extraction and every copy of document text go
                row.document, row.title, row.failure_detail = None, None, None
                self._versions[version_id][3] = "deleted"
            source = self._source_rows.get(source_id)
            if source is not None and source.state == "deleting":
                source.state, source.updated_at = "deleted", self._clock()
                self._sources[(source.tenant_id, source.origin)][2] = None

    def tombstoned_chunk_ids(self, tenant_id: str) -> set[str]:
        with self._lock:
            return {
                chunk_id
                for tenant, _, chunk_id, store in self._tombstones
                if tenant == tenant_id and store == "catalog" and chunk_id not in self._chunks
            }

    # re-scoping and tags ----------------------------------------------------------------------
    def _live_source(self, tenant_id: str, source_id: str) -> _Source | None:
        source = self._source_rows.get(source_id)
        if source is None or source.tenant_id != tenant_id or source.state != "active":
            return None
        return source

    def set_source_subjects(self, tenant_id: str, source_id: str, subjects: Sequence[str]) -> bool:
        with self._lock:
            source = self._live_source(tenant_id, source_id)
            if source is None:
                return False
            source.subjects, source.updated_at = tuple(subjects), self._clock()
            return True

    def set_source_tags(self, tenant_id: str, source_id: str, tags: Sequence[str]) -> bool:
        with self._lock:
            source = self._live_source(tenant_id, source_id)
            if source is None:
                return False
            source.tags, source.updated_at = tuple(sorted(set(tags))), self._clock()
            return True

    def relocate_source(
        self, tenant_id: str, source_id: str, filename: str, location: Mapping[str, str]
    ) -> bool:
        """The fake keeps no version locations: the filename is what it shows."""
        with self._lock:
            source = self._live_source(tenant_id, source_id)
            if source is None:
                return False
            source.filename, source.updated_at = filename, self._clock()
            return True

    def inbox_sources(self, tenant_id: str) -> dict[str, tuple[str, tuple[str, ...]]]:
        with self._lock:
            return {
                s.origin: (source_id, s.subjects)
                for source_id, s in self._source_rows.items()
                if s.tenant_id == tenant_id
                and s.state == "active"
                and s.origin.startswith("inbox:")
            }

    def record_inbox_scan(self, tenant_id: str, fingerprint: str, rescan_wanted: bool) -> None:
        with self._lock:
            if tenant_id in self._tenants:  # the table's foreign key
                self._inbox_scans[tenant_id] = (fingerprint, rescan_wanted)

    def inbox_scans(self, tenant_ids: Sequence[str]) -> dict[str, tuple[str, bool]]:
        with self._lock:
            return {t: self._inbox_scans[t] for t in tenant_ids if t in self._inbox_scans}

    # tenant erasure ------------------------------------------------------------------------
    def tenant_blob_keys(self, tenant_id: str) -> list[str]:
        with self._lock:
            mine = {v.blob_key for v in self._version_rows.values() if v.tenant_id == tenant_id}
            others = {v.blob_key for v in self._version_rows.values() if v.tenant_id != tenant_id}
            return sorted(mine - others)

    def erase_tenant_rows(self, tenant_id: str) -> None:
        """Every row the tenant owns, as the tenant row's cascade removes them
        (tombstones are not the tenant's rows: they hold ids, no text)."""
        with self._lock:
            self._tenants.pop(tenant_id, None)
            self._serving.pop(tenant_id, None)
            self._inbox_scans.pop(tenant_id, None)
            self._keys = {k: v for k, v in self._keys.items() if v[0].tenant_id != tenant_id}
            versions = {v for v, row in self._version_rows.items() if row.tenant_id == tenant_id}
            sources = {s for s, row in self._source_rows.items() if row.tenant_id == tenant_id}
            self._versions = {v: row for v, row in self._versions.items() if v not in versions}
            self._version_rows = {
                v: row for v, row in self._version_rows.items() if v not in versions
            }
            self._sources = {k: row for k, row in self._sources.items() if k[0] != tenant_id}
            self._source_rows = {s: row for s, row in self._source_rows.items() if s not in sources}
            self._chunks = {k: c for k, c in self._chunks.items() if c.tenant_id != tenant_id}
            self._summaries = {v: m for v, m in self._summaries.items() if v not in versions}
            self._progress = {k: p for k, p in self._progress.items() if k[0] not in versions}
            self._pointers = {k: p for k, p in self._pointers.items() if k[0] not in sources}

    # the serving model -------------------------------------------------------------------
    def switch_serving_model(self, tenant_id: str, model_key: str, expected_current: str) -> bool:
        with self._lock:
            tenant = self._tenants.get(tenant_id)
            if tenant is None or tenant.active_model != expected_current:
                return False
            self._tenants[tenant_id] = replace(tenant, active_model=model_key)
            self._serving[tenant_id] = (tenant.active_model, self._clock())
            return True

    def previous_model(self, tenant_id: str) -> str | None:
        with self._lock:
            return self._serving.get(tenant_id, (None, 0.0))[0]

    def models_to_retire(self, tenant_id: str, grace_seconds: float) -> list[str]:
        with self._lock:
            tenant = self._tenants.get(tenant_id)
            previous, switched_at = self._serving.get(tenant_id, (None, 0.0))
            if (
                tenant is None
                or previous is None
                or previous == tenant.active_model
                or switched_at >= self._clock() - grace_seconds
            ):
                return []
            return [previous]

    def forget_model(self, tenant_id: str, model_key: str) -> None:
        with self._lock:
            self._progress = {
                k: p
                for k, p in self._progress.items()
                if not (p.tenant_id == tenant_id and k[1] == model_key)
            }
            self._pointers = {
                k: p
                for k, p in self._pointers.items()
                if not (p.tenant_id == tenant_id and k[1] == model_key)
            }
            previous, switched_at = self._serving.get(tenant_id, (None, 0.0))
            if previous == model_key:
                self._serving[tenant_id] = (None, switched_at)


if TYPE_CHECKING:

    def _each_port_is_served() -> None:
        """mypy proves the fake satisfies every port it stands in for."""
        _tenants: TenantDirectory = InMemoryPipelineCatalog()
        _registration: RegistrationLedger = InMemoryPipelineCatalog()
        _stages: StageProgress = InMemoryPipelineCatalog()
        _summaries: SummaryLedger = InMemoryPipelineCatalog()
        _lifecycle: LifecycleLedger = InMemoryPipelineCatalog()


__all__ = ["InMemoryPipelineCatalog"]
