"""Ports: the contracts adapters implement. Each has one conformance suite in
tests/conformance that every adapter passes; the docstrings and the suites say
the same thing.

Ports listed in one place (most are here; a port whose records live elsewhere
is defined beside them):
- this module: EmbeddingProvider, VectorIndex, KeywordIndex, BlobStore,
  ChunkReader, OcrProvider, TranscriptionProvider, VisionProvider,
  MalwareScanner, IngestTrigger
- groundwork.catalog: TenantDirectory, RegistrationLedger, StageProgress,
  SummaryLedger, SourceReading, LifecycleLedger
- groundwork.files: FileMetadataStore
- groundwork.overview: OverviewLedger (the compiled overview pages)
- groundwork.artifacts: ArtifactStore; groundwork.artifact_exports: ExportStore
- groundwork.eval_records: EvalRuns (eval suites and runs)
- groundwork.chunking: ChunkingStrategy (StructureAwareChunking is its first adapter)
- groundwork.inspection: FileInspector; groundwork.extract.base: DocumentParser
- groundwork.render.renderers: ArtifactRenderer (one adapter per artifact format)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from groundwork.embedding_models import EmbeddingModelRef
from groundwork.retrieval.outcome import ChunkView

#: The owner of the shared system corpus: a reserved tenant id (never an
#: ordinary tenant's) whose documents every tenant reads beside its own unless
#: it turned that off. Its rows are written only with the system:admin scope.
SYSTEM_TENANT = "system"

#: Where a passage came from: the caller's own tenant or the system corpus.
Corpus = Literal["tenant", "system"]


@dataclass(frozen=True, slots=True)
class SystemReading:
    """The system corpus as one scope reads it: the system tenant's rows whose
    subjects intersect `subjects` (groundwork.services.tenant_wall decides)."""

    tenant_id: str
    subjects: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AccessScope:
    """Who is asking. Every search leg takes one; there is no unscoped search.
    `system`: the shared system corpus is read too (owner in (tenant, system)),
    under its own subjects; None reads the tenant's own rows only."""

    tenant_id: str
    subjects: tuple[str, ...]
    system: SystemReading | None = None

    def readable_owners(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(owner, subjects) of each corpus a leg reads: the tenant's own rows,
        then the system corpus's when this scope reads it. A leg applies each
        pair inside its query (owner AND subjects), never one without the other."""
        owners = [(self.tenant_id, self.subjects)]
        system = self.system
        if system is not None and system.subjects and system.tenant_id != self.tenant_id:
            owners.append((system.tenant_id, system.subjects))
        return tuple(owners)

    def corpus_of(self, owner: str) -> Corpus:
        """Which corpus a row of `owner` that this scope read belongs to."""
        return "system" if owner != self.tenant_id else "tenant"


#: Which layer of the corpus a chunk belongs to: the document's own text
#: ("raw") or its compiled summary page ("summary"). One chunk table and one
#: index hold both, so every rule (wall, subjects, publication, erasure) covers
#: both; the legs filter by layer.
Layer = Literal["raw", "summary"]
LAYERS: tuple[Layer, ...] = ("raw", "summary")

#: What kind of document a chunk comes from: a file that was registered
#: ("source") or a generated artifact saved into the corpus ("artifact",
#: invariant 10). A source's kind never changes (registration refuses a switch),
#: so the indexes keep it on every row and filter by it inside each leg.
DocumentType = Literal["source", "artifact"]
DOCUMENT_TYPES: tuple[DocumentType, ...] = ("source", "artifact")


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Metadata filters applied inside each leg (never after). A leg returns
    chunks of `layer` only: raw chunks unless the summary layer is asked for
    (no filters at all means the raw layer too)."""

    source_ids: tuple[str, ...] | None = None
    media_types: tuple[str, ...] | None = None
    tags: tuple[str, ...] | None = None  # any of these tags
    date_from: datetime | None = None  # inclusive, on the source version's date
    date_to: datetime | None = None  # exclusive
    layer: Layer = "raw"
    document_types: tuple[DocumentType, ...] | None = None  # any of these kinds


def search_layer(filters: SearchFilters | None) -> Layer:
    """The layer a leg searches for these filters (raw when there are none)."""
    return filters.layer if filters is not None else "raw"


@dataclass(frozen=True, slots=True)
class IndexedChunk:
    """What a search index stores for one chunk: enough to filter and rank."""

    chunk_id: str
    tenant_id: str
    source_id: str
    version_id: str
    subjects: tuple[str, ...]
    media_type: str
    title: str
    content: str
    content_hash: str
    tags: tuple[str, ...] = ()
    source_date: datetime | None = None
    layer: Layer = "raw"
    document_type: DocumentType = "source"


@dataclass(frozen=True, slots=True)
class VectorRecord:
    chunk: IndexedChunk
    vector: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    chunk_id: str
    source_id: str
    version_id: str
    score: float


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns text into vectors of `model.dimension` floats, offline.

    `embed_documents` and `embed_query` differ only where the model asks for a
    query instruction prefix. Vectors are L2-normalised so cosine = dot product.
    Empty input gives empty output; it never downloads anything.
    """

    @property
    def model(self) -> EmbeddingModelRef: ...

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]: ...

    def embed_query(self, text: str) -> tuple[float, ...]: ...

    def count_tokens(self, text: str) -> int: ...


@runtime_checkable
class VectorIndex(Protocol):
    """Nearest-neighbour search over one embedding model's vectors.

    Contract:
    - Records are written not live; `set_live` makes a source version
      searchable (publication) or unsearchable (deletion, first step).
    - `search` returns only live records of `scope.tenant_id` whose subjects
      intersect `scope.subjects`, filtered inside the query; an empty subject
      list returns nothing. Results are ordered by descending similarity.
    - With `scope.system` set it also returns live records of
      `scope.system.tenant_id` whose subjects intersect `scope.system.subjects`,
      in the same query, ranked together; never any other tenant's.
    - `search` returns records of one layer only (`filters.layer`; raw when
      no filters are given): summary chunks never enter a raw search.
    - `filters.document_types` keeps records of those document kinds only
      (an artifact's chunks, a registered file's, or both), inside the query.
    - A vector whose length is not `model.dimension` is refused with
      DimensionMismatch before anything is written.
    - Writing the same chunk id again replaces the record (idempotent).
    """

    @property
    def model(self) -> EmbeddingModelRef: ...

    def ensure_schema(self) -> None: ...

    def upsert(self, records: Sequence[VectorRecord]) -> int: ...

    def set_live(self, tenant_id: str, source_id: str, version_id: str | None, live: bool) -> int:
        """Flip liveness for a source's records (of one version, or all when None)."""
        ...

    def set_versions_live(self, tenant_id: str, version_ids: Sequence[str], live: bool) -> int:
        """Flip liveness for every record of these versions (batched publication)."""
        ...

    def set_subjects(self, tenant_id: str, source_id: str, subjects: Sequence[str]) -> int: ...

    def set_tags(self, tenant_id: str, source_id: str, tags: Sequence[str]) -> int: ...

    def search(
        self,
        scope: AccessScope,
        vector: Sequence[float],
        limit: int,
        filters: SearchFilters | None = None,
    ) -> list[ScoredChunk]: ...

    def existing_vectors(
        self, tenant_id: str, content_hashes: Sequence[str]
    ) -> dict[str, tuple[float, ...]]:
        """The tenant's stored vectors by content hash: the embedding cache."""
        ...

    def delete_source(
        self, tenant_id: str, source_id: str, keep_version_id: str | None = None
    ) -> int:
        """Delete a source's records, or only those not of `keep_version_id`."""
        ...

    def delete_versions(self, tenant_id: str, version_ids: Sequence[str]) -> int:
        """Delete every record of these versions (superseded after publication)."""
        ...

    def delete_tenant(self, tenant_id: str) -> int: ...

    def chunk_ids(self, tenant_id: str, live_only: bool = True) -> set[str]: ...


@runtime_checkable
class KeywordIndex(Protocol):
    """Lexical (BM25-like) search over chunk text.

    Contract: the same as VectorIndex for liveness, scope, filters, layers, ordering and
    idempotence. Identifier-shaped terms such as ERR-4021 or Q3-2026 are
    searchable as whole tokens. Stopwords are not removed from the index.
    A tenant's scores depend on its own documents only. A store that cannot
    take another tenant refuses that tenant's first write with
    CapacityExhausted, never by dropping or misplacing its documents.
    """

    def ensure_schema(self) -> None: ...

    def upsert(self, chunks: Sequence[IndexedChunk]) -> int: ...

    def set_live(
        self, tenant_id: str, source_id: str, version_id: str | None, live: bool
    ) -> int: ...

    def set_versions_live(self, tenant_id: str, version_ids: Sequence[str], live: bool) -> int: ...

    def set_subjects(self, tenant_id: str, source_id: str, subjects: Sequence[str]) -> int: ...

    def set_tags(self, tenant_id: str, source_id: str, tags: Sequence[str]) -> int: ...

    def search(
        self,
        scope: AccessScope,
        query: str,
        limit: int,
        filters: SearchFilters | None = None,
    ) -> list[ScoredChunk]: ...

    def delete_source(
        self, tenant_id: str, source_id: str, keep_version_id: str | None = None
    ) -> int: ...

    def delete_versions(self, tenant_id: str, version_ids: Sequence[str]) -> int:
        """Delete every record of these versions (superseded after publication)."""
        ...

    def delete_tenant(self, tenant_id: str) -> int: ...

    def chunk_ids(self, tenant_id: str, live_only: bool = True) -> set[str]: ...

    def compact(self, tenant_id: str) -> bool:
        """After a publication rewrote a tenant's documents (written hidden,
        then made live, superseded ones deleted), have the store merge what the
        rewrites left into fewer parts where that is cheap, without waiting
        for it. True when a merge was started; False when there is nothing
        worth merging, or the store reclaims by itself (PostgreSQL's vacuum).
        Searches answer the same either way, only cheaper after."""
        ...


@runtime_checkable
class BlobStore(Protocol):
    """Immutable original bytes by key. `put` of an existing key with the same
    bytes is a no-op; the key never leaves the platform (not in API output).

    Every write is all-or-nothing: a put that fails or is interrupted part way
    (its source raising, the process dying) leaves nothing readable under the
    key, and a store holding a previous object keeps it. A missing key raises
    NotFound from `get` and from the first piece of `read_chunks`; `delete` of
    a missing key does nothing. `list_keys` yields every stored key once,
    however many there are (pages are the adapter's business), and never a
    write still in flight. Keys are `[A-Za-z0-9][A-Za-z0-9_-/.]*` up to 251
    characters; others are refused with StoreError."""

    def put(self, key: str, data: bytes) -> None: ...

    def put_file(self, key: str, source: Path) -> None:
        """Like `put`, streaming from a local file: never holds it in memory."""
        ...

    def put_stream(self, key: str, pieces: Iterable[bytes]) -> None:
        """Like `put`, from pieces produced as they are read (a copy from
        another store, a request body): nothing is readable under the key
        until the last piece is in, and an exception from `pieces` stores
        nothing and propagates."""
        ...

    def get(self, key: str) -> bytes: ...

    def read_chunks(
        self, key: str, chunk_size: int = 0, *, offset: int = 0, length: int | None = None
    ) -> Iterator[bytes]:
        """The bytes in pieces (0 = the store's own piece size); NotFound if
        absent. `offset`/`length` read a range (clipped at the end of the
        object; past it, nothing)."""
        ...

    def exists(self, key: str) -> bool: ...

    def delete(self, key: str) -> None: ...

    def list_keys(self) -> Iterator[str]: ...

    def incomplete_writes(self) -> Iterator[str]:
        """Writes begun and never finished (a process killed mid-put): the
        key of an S3 multipart upload never completed, the path of a folder's
        temporary file. Never readable, never in `list_keys`, but stored
        bytes all the same: reconciliation reports them, `delete` of the key
        removes an S3 one."""
        ...

    def presign_get(
        self, key: str, lifetime: timedelta, *, content_type: str, content_disposition: str
    ) -> str | None:
        """A URL that reads the object without the platform for `lifetime`,
        answering with exactly these Content-Type and Content-Disposition
        headers; None when the store cannot sign (the read is then proxied).
        The caller clamps the lifetime: a signed URL cannot be revoked."""
        ...


#: what a key gets unless more (sources:admin, artifacts:approve) is asked for;
#: the whole table of scopes is groundwork.services.scopes
DEFAULT_KEY_SCOPES: tuple[str, ...] = (
    "files:read",
    "files:write",
    "files:delete",
    "artifacts:write",
)


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller of the API: resolved from an API key, never from input."""

    tenant_id: str
    subjects: tuple[str, ...]
    key_id: str = ""
    extra: dict[str, str] = field(default_factory=dict)
    scopes: tuple[str, ...] = DEFAULT_KEY_SCOPES

    @property
    def scope(self) -> AccessScope:
        return AccessScope(self.tenant_id, self.subjects)


@runtime_checkable
class ChunkReader(Protocol):
    """Reads chunks back for hits, re-checking at result time that each source
    is still live and readable by the scope (a permission change or deletion
    that has not reached an index yet must not leak through it; a system
    corpus chunk only while `scope.system` is set), and that each
    chunk is of the version its source publishes. One version per source per
    call: when the published version's chunks are asked for, only those; when
    only the version the pointer left within the last RETIRE_GRACE_SECONDS is
    asked for (a search whose legs ran just before a switch), that one."""

    def load_chunks(self, scope: AccessScope, chunk_ids: Sequence[str]) -> dict[str, ChunkView]: ...

    def has_accessible_sources(self, scope: AccessScope) -> bool: ...

    def section(self, scope: AccessScope, chunk_id: str) -> list[ChunkView]:
        """The chunks sharing this chunk's heading path in its source version, in order."""
        ...


@dataclass(frozen=True, slots=True)
class OcrLine:
    text: str
    confidence: float  # mean word confidence in [0, 1]
    bbox: tuple[float, float, float, float]  # x0, y0, x1, y1 in image pixels


@dataclass(frozen=True, slots=True)
class OcrResult:
    """Text recognised on one image, in reading order, grouped into paragraphs of lines."""

    paragraphs: tuple[tuple[OcrLine, ...], ...]
    mean_confidence: float
    rotation_degrees: int  # rotation applied to make the page upright
    width: int
    height: int


@runtime_checkable
class OcrProvider(Protocol):
    """Recognises text in an image (PNG/JPEG/TIFF/WebP bytes), correcting
    orientation first. A blank image gives an empty result, not an error."""

    def recognize(self, image: bytes) -> OcrResult: ...


@dataclass(frozen=True, slots=True)
class TranscriptSegment:
    start_seconds: float
    end_seconds: float
    text: str
    confidence: float


@runtime_checkable
class TranscriptionProvider(Protocol):
    """Speech to timestamped text for audio or video bytes. `duration_seconds`
    reads the container without decoding, so length is bounded before work."""

    def duration_seconds(self, media: bytes) -> float: ...

    def transcribe(self, media: bytes, filename: str) -> tuple[TranscriptSegment, ...]: ...


@dataclass(frozen=True, slots=True)
class ImageDescription:
    """A model's description of an image: labelled as a description, never as
    a transcription of text in it."""

    text: str
    model: str


@runtime_checkable
class VisionProvider(Protocol):
    """Describes images. Without a configured model endpoint the adapter raises
    CapabilityUnavailable; it never fabricates a description."""

    def describe(self, image: bytes) -> ImageDescription: ...


@dataclass(frozen=True, slots=True)
class ScanClean:
    engine: str


@dataclass(frozen=True, slots=True)
class ScanInfected:
    signature: str  # the scanner's name for what it found
    engine: str


ScanVerdict = ScanClean | ScanInfected


@runtime_checkable
class MalwareScanner(Protocol):
    """Scans bytes before a version may become `stored`.

    `scan` takes the bytes in pieces so a large file is never held whole. A
    verdict is a value (clean or infected); a scanner that cannot give one
    (daemon down, size limit) raises EngineUnavailable, and the version then
    stays `pending` — never `stored` unscanned.
    """

    def scan(self, pieces: Iterable[bytes]) -> ScanVerdict: ...


@dataclass(frozen=True, slots=True)
class IngestRequested:
    """The orchestrator accepted a run that will process the tenant's stored work."""

    run_id: str


@dataclass(frozen=True, slots=True)
class IngestAlreadyQueued:
    """A run that has not started yet will see the new work; nothing was added."""

    run_id: str


@dataclass(frozen=True, slots=True)
class IngestNotRequested:
    """No run was requested now (no orchestrator configured, or it did not
    answer); the pending-work sensor still finds the work on its next pass."""

    reason: str


IngestTriggerOutcome = IngestRequested | IngestAlreadyQueued | IngestNotRequested

#: The run label naming why an ingest run was requested; these two values mean
#: a file arrived, so the run has a document to extract.
TRIGGER_LABEL = "groundwork/trigger"
REGISTRATION_TRIGGER = "registration"
INBOX_TRIGGER = "inbox"
FILE_ARRIVED_TRIGGERS = frozenset({REGISTRATION_TRIGGER, INBOX_TRIGGER})


class IngestTrigger(Protocol):
    """Asks the orchestrator to process a tenant's newly stored work now.

    Why a port: a registration through the API would otherwise wait for the
    pending-work sensor's next pass. Best effort by design: an outcome, never
    an error, because the registration itself already succeeded and the
    sensor remains the guarantee that stored work is processed."""

    def request_ingest(
        self, tenant_id: str, labels: Mapping[str, str] | None = None
    ) -> IngestTriggerOutcome:
        """Request (or reuse a queued) ingest run for the tenant's partition;
        `labels` travel with a new run (e.g. the inbox state it was asked for)."""
        ...
