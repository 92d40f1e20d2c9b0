"""In-memory fakes of the ports, for fast kernel tests. Each one passes the
same conformance suite as the real adapters (tests/conformance), so a kernel
test against a fake means what it says."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from groundwork.artifact_staleness import CitedChunk, CitedSource
from groundwork.artifacts import (
    ArtifactFile,
    ArtifactRecord,
    ArtifactVersion,
    NewFile,
    StaleGenerationError,
)
from groundwork.catalog import (
    ApiKeyInfo,
    Authenticated,
    NeedsApproval,
    PendingVersion,
    Tenant,
    Unchanged,
)
from groundwork.chunking import Chunk
from groundwork.documents import ExtractedDocument, ExtractionFailure
from groundwork.embedding_models import EmbeddingModelRef, Pooling
from groundwork.errors import (
    DimensionMismatch,
    EngineUnavailable,
    InvalidRequest,
    NotFound,
    StoreError,
)
from groundwork.files import MAX_PAGE as FILES_MAX_PAGE
from groundwork.files import FilePage, FileVersionInfo, decode_cursor, encode_cursor
from groundwork.ports import (
    DEFAULT_KEY_SCOPES,
    AccessScope,
    IndexedChunk,
    OcrLine,
    OcrResult,
    Principal,
    ScanClean,
    ScanInfected,
    ScanVerdict,
    ScoredChunk,
    SearchFilters,
    TranscriptSegment,
    VectorRecord,
    search_layer,
)
from groundwork.retrieval.kernel import FusionConstants
from groundwork.retrieval.outcome import ChunkView
from groundwork.retrieval.query import code_pattern, keyword_query
from groundwork.services.scopes import ALL_SCOPES
from groundwork.stages.publication import RETIRE_GRACE_SECONDS
from groundwork.stages.registration import blob_key_for
from testbed.hashed_vectors import hashed_vector

FAKE_MODEL = EmbeddingModelRef(
    key="fake_hashing",
    name="hashing bag of words",
    version="1",
    dimension=384,
    pooling=Pooling.MEAN,
)
_WORD = re.compile(r"[\w][\w\-./]*[\w]|[\w]", re.UNICODE)


def _words_in_order(text: str) -> list[str]:
    return [p for token in _WORD.findall(text.lower()) for p in re.split(r"[-./]", token) if p]


def _has_phrase(text: str, phrase: str) -> bool:
    """The phrase's words appear together and in order."""
    words, wanted = _words_in_order(text), _words_in_order(phrase)
    return bool(wanted) and any(
        words[i : i + len(wanted)] == wanted for i in range(len(words) - len(wanted) + 1)
    )


def _terms(text: str) -> list[str]:
    out: list[str] = []
    for token in _WORD.findall(text.lower()):
        out.append(token)
        parts = re.split(r"[-./]", token)
        if len(parts) > 1:
            out.extend(p for p in parts if p)
    return out


class HashingEmbedder:
    """Bag-of-words hashed into 384 dimensions: deterministic, offline, crude."""

    @property
    def model(self) -> EmbeddingModelRef:
        return FAKE_MODEL

    def _vector(self, text: str) -> tuple[float, ...]:
        return hashed_vector(_terms(text), FAKE_MODEL.dimension)

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> tuple[float, ...]:
        return self._vector(text)

    def count_tokens(self, text: str) -> int:
        return len(_terms(text)) + len(text) // 4


def readable_by(owner: str, subjects: Sequence[str], scope: AccessScope) -> bool:
    """A row of `owner` with `subjects` is one `scope` reads: one of the
    corpora it reads (its tenant's, the system corpus's), under that one's subjects."""
    return any(
        owner == reader and bool(set(subjects) & set(readable))
        for reader, readable in scope.readable_owners()
    )


def _visible(chunk: IndexedChunk, scope: AccessScope, filters: SearchFilters | None) -> bool:
    if not readable_by(chunk.tenant_id, chunk.subjects, scope):
        return False
    if chunk.layer != search_layer(filters):
        return False
    if filters and filters.source_ids is not None and chunk.source_id not in filters.source_ids:
        return False
    if filters and filters.media_types is not None and chunk.media_type not in filters.media_types:
        return False
    if filters and filters.tags is not None and not set(chunk.tags) & set(filters.tags):
        return False
    if (
        filters
        and filters.date_from is not None
        and (chunk.source_date is None or chunk.source_date < filters.date_from)
    ):
        return False
    if (
        filters
        and filters.document_types is not None
        and chunk.document_type not in filters.document_types
    ):
        return False
    return not (
        filters
        and filters.date_to is not None
        and (chunk.source_date is None or chunk.source_date >= filters.date_to)
    )


@dataclass
class _Row:
    chunk: IndexedChunk
    live: bool
    vector: tuple[float, ...] = ()


class _RowStore:
    def __init__(self) -> None:
        self.rows: dict[str, _Row] = {}

    def _put(self, chunk: IndexedChunk, vector: tuple[float, ...] = ()) -> None:
        old = self.rows.get(chunk.chunk_id)
        live = bool(old and old.live and old.chunk.version_id == chunk.version_id)
        self.rows[chunk.chunk_id] = _Row(chunk, live, vector)

    def set_live(self, tenant_id: str, source_id: str, version_id: str | None, live: bool) -> int:
        n = 0
        for row in self.rows.values():
            c = row.chunk
            if (
                c.tenant_id == tenant_id
                and c.source_id == source_id
                and version_id in (None, c.version_id)
                and row.live != live
            ):
                row.live = live
                n += 1
        return n

    def set_versions_live(self, tenant_id: str, version_ids: Sequence[str], live: bool) -> int:
        n = 0
        for row in self.rows.values():
            if (
                row.chunk.tenant_id == tenant_id
                and row.chunk.version_id in version_ids
                and row.live != live
            ):
                row.live = live
                n += 1
        return n

    def set_subjects(self, tenant_id: str, source_id: str, subjects: Sequence[str]) -> int:
        n = 0
        for chunk_id, row in self.rows.items():
            c = row.chunk
            if c.tenant_id == tenant_id and c.source_id == source_id:
                self.rows[chunk_id] = _Row(
                    # every other field kept (tags, date, layer, document type)
                    dataclasses.replace(c, subjects=tuple(subjects)),
                    row.live,
                    row.vector,
                )
                n += 1
        return n

    def set_tags(self, tenant_id: str, source_id: str, tags: Sequence[str]) -> int:
        n = 0
        for chunk_id, row in self.rows.items():
            c = row.chunk
            if c.tenant_id == tenant_id and c.source_id == source_id:
                self.rows[chunk_id] = _Row(
                    dataclasses.replace(c, tags=tuple(tags)), row.live, row.vector
                )
                n += 1
        return n

    def delete_source(
        self, tenant_id: str, source_id: str, keep_version_id: str | None = None
    ) -> int:
        doomed = [
            k
            for k, r in self.rows.items()
            if r.chunk.tenant_id == tenant_id
            and r.chunk.source_id == source_id
            and r.chunk.version_id != keep_version_id
        ]
        for k in doomed:
            del self.rows[k]
        return len(doomed)

    def delete_versions(self, tenant_id: str, version_ids: Sequence[str]) -> int:
        wanted = set(version_ids)
        doomed = [
            k
            for k, r in self.rows.items()
            if r.chunk.tenant_id == tenant_id and r.chunk.version_id in wanted
        ]
        for k in doomed:
            del self.rows[k]
        return len(doomed)

    def delete_tenant(self, tenant_id: str) -> int:
        doomed = [k for k, r in self.rows.items() if r.chunk.tenant_id == tenant_id]
        for k in doomed:
            del self.rows[k]
        return len(doomed)

    def chunk_ids(self, tenant_id: str, live_only: bool = True) -> set[str]:
        return {
            k
            for k, r in self.rows.items()
            if r.chunk.tenant_id == tenant_id and (r.live or not live_only)
        }


class InMemoryVectorIndex(_RowStore):
    def __init__(self, model: EmbeddingModelRef = FAKE_MODEL) -> None:
        super().__init__()
        self._model = model

    @property
    def model(self) -> EmbeddingModelRef:
        return self._model

    def ensure_schema(self) -> None:
        return None

    def upsert(self, records: Sequence[VectorRecord]) -> int:
        for record in records:
            if len(record.vector) != self._model.dimension:
                raise DimensionMismatch(f"{len(record.vector)} != {self._model.dimension}")
        for record in records:
            self._put(record.chunk, record.vector)
        return len(records)

    def search(
        self,
        scope: AccessScope,
        vector: Sequence[float],
        limit: int,
        filters: SearchFilters | None = None,
    ) -> list[ScoredChunk]:
        if len(vector) != self._model.dimension:
            raise DimensionMismatch(f"{len(vector)} != {self._model.dimension}")
        if not scope.subjects or limit <= 0:
            return []
        scored = [
            ScoredChunk(
                r.chunk.chunk_id,
                r.chunk.source_id,
                r.chunk.version_id,
                sum(a * b for a, b in zip(r.vector, vector, strict=True)),
            )
            for r in self.rows.values()
            if r.live and _visible(r.chunk, scope, filters)
        ]
        scored.sort(key=lambda h: (-h.score, h.chunk_id))
        return scored[:limit]

    def existing_vectors(
        self, tenant_id: str, content_hashes: Sequence[str]
    ) -> dict[str, tuple[float, ...]]:
        wanted = set(content_hashes)
        return {
            r.chunk.content_hash: r.vector
            for r in self.rows.values()
            if r.chunk.tenant_id == tenant_id and r.chunk.content_hash in wanted
        }


#: a code found as written, above any BM25 sum of a short query's words
CODE_MATCH_SCORE = 10.0


class InMemoryKeywordIndex(_RowStore):
    """BM25-style scoring over hyphen-aware terms (whole identifiers and their parts)."""

    def ensure_schema(self) -> None:
        return None

    def compact(self, tenant_id: str) -> bool:
        return False  # rows in a dict: nothing is left behind to merge

    def upsert(self, chunks: Sequence[IndexedChunk]) -> int:
        for chunk in chunks:
            self._put(chunk)
        return len(chunks)

    def search(
        self, scope: AccessScope, query: str, limit: int, filters: SearchFilters | None = None
    ) -> list[ScoredChunk]:
        parsed = keyword_query(query)
        terms = set(_terms(" ".join([parsed.words, *parsed.phrases])))
        if not scope.subjects or limit <= 0 or not terms:
            return []
        visible = [
            r.chunk
            for r in self.rows.values()
            if r.live
            and _visible(r.chunk, scope, filters)
            and all(_has_phrase(r.chunk.content, p) for p in parsed.phrases)
        ]
        documents = {c.chunk_id: _terms(c.content) for c in visible}
        n = len(documents) or 1
        df = {t: sum(1 for words in documents.values() if t in words) for t in terms}
        # a code as written ranks on top of its words, and matches on its own
        codes = [re.compile(code_pattern(code), re.I) for code in parsed.codes]
        hits: list[ScoredChunk] = []
        for chunk in visible:
            words = documents[chunk.chunk_id]
            score = 0.0
            for term in terms:
                tf = words.count(term)
                if tf:
                    idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                    score += idf * tf * 2.2 / (tf + 1.2)
            score += CODE_MATCH_SCORE * sum(1 for code in codes if code.search(chunk.content))
            if score > 0:
                hits.append(ScoredChunk(chunk.chunk_id, chunk.source_id, chunk.version_id, score))
        hits.sort(key=lambda h: (-h.score, h.chunk_id))
        return hits[:limit]


class InMemoryChunkReader:
    """ChunkReader over chunk views with per-source subjects, deletion and a
    publication pointer per source (passes tests/conformance/test_chunk_reader.py)."""

    def __init__(self) -> None:
        self.views: dict[str, tuple[str, ChunkView, int]] = {}  # id -> (tenant, view, position)
        self.subjects: dict[str, tuple[str, ...]] = {}  # source id -> subjects
        self.deleted: set[str] = set()
        self.published: dict[str, str] = {}  # source id -> version id
        self.previous: dict[str, tuple[str, float]] = {}  # source id -> (version, switched at)

    def add(self, tenant_id: str, view: ChunkView, subjects: Sequence[str]) -> None:
        """A chunk of a version that is published at once (the kernel tests' shortcut)."""
        self.views[view.chunk_id] = (tenant_id, view, len(self.views))
        self.subjects[view.source_id] = tuple(subjects)
        self.published[view.source_id] = view.version_id

    def add_version(self, tenant_id: str, chunks: Sequence[Chunk], subjects: Sequence[str]) -> None:
        for chunk in chunks:
            view = ChunkView(
                chunk_id=chunk.chunk_id,
                source_id=chunk.source_id,
                version_id=chunk.version_id,
                title="",
                filename="",
                media_type="text/markdown",
                heading_path=chunk.heading_path,
                body=chunk.body,
                location=chunk.location,
                content_hash=chunk.content_hash,
                low_confidence=chunk.low_confidence,
                layer=chunk.layer,
            )
            self.views[chunk.chunk_id] = (tenant_id, view, chunk.position)
            self.subjects[chunk.source_id] = tuple(subjects)

    def publish(self, version_id: str) -> None:
        for _, view, _ in self.views.values():
            if view.version_id == version_id:
                before = self.published.get(view.source_id)
                if before is not None and before != version_id:
                    self.previous[view.source_id] = (before, time.monotonic())
                self.published[view.source_id] = version_id

    def _allowed(
        self, tenant_id: str, view: ChunkView, scope: AccessScope, previous: bool = False
    ) -> bool:
        left = self.previous.get(view.source_id)
        return (
            readable_by(tenant_id, self.subjects.get(view.source_id, ()), scope)
            and view.source_id not in self.deleted
            and (
                self.published.get(view.source_id) == view.version_id
                or (
                    previous
                    and left is not None
                    and left[0] == view.version_id
                    and time.monotonic() - left[1] < RETIRE_GRACE_SECONDS
                )
            )
        )

    def load_chunks(self, scope: AccessScope, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
        found = [self.views[c] for c in chunk_ids if c in self.views]
        allowed = [
            (t, dataclasses.replace(v, corpus=scope.corpus_of(t)))
            for t, v, _ in found
            if self._allowed(t, v, scope, previous=True)
        ]
        current = {
            v.source_id for _, v in allowed if self.published.get(v.source_id) == v.version_id
        }
        return {
            v.chunk_id: v
            for _, v in allowed
            if v.source_id not in current or self.published.get(v.source_id) == v.version_id
        }

    def has_accessible_sources(self, scope: AccessScope) -> bool:
        return any(self._allowed(t, v, scope) for t, v, _ in self.views.values())

    def section(self, scope: AccessScope, chunk_id: str) -> list[ChunkView]:
        found = self.views.get(chunk_id)
        if found is None or not self._allowed(found[0], found[1], scope):
            return []
        view = found[1]
        siblings = [
            (position, v)
            for t, v, position in self.views.values()
            if v.source_id == view.source_id
            and v.version_id == view.version_id
            and v.heading_path == view.heading_path
            and v.layer == view.layer
            and self._allowed(t, v, scope)
        ]
        return [v for _, v in sorted(siblings, key=lambda item: item[0])]

    def __iter__(self) -> Iterator[ChunkView]:
        return iter(v for _, v, _ in self.views.values())


class InMemoryBlobStore:
    """The BlobStore port in a dict (passes tests/conformance/test_blob_store.py).
    Cannot sign URLs (presign_get is None), as the filesystem adapter."""

    _KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-/.]{0,250}$")

    def __init__(self) -> None:
        self._blobs: dict[str, bytes] = {}

    def _checked(self, key: str) -> str:
        if not self._KEY.match(key) or ".." in key.split("/"):
            raise StoreError(f"invalid blob key {key!r}")
        return key

    def put(self, key: str, data: bytes) -> None:
        self._blobs.setdefault(self._checked(key), bytes(data))

    def put_file(self, key: str, source: Path) -> None:
        if self._checked(key) not in self._blobs:
            self._blobs[key] = source.read_bytes()

    def put_stream(self, key: str, pieces: Iterable[bytes]) -> None:
        self._blobs[self._checked(key)] = b"".join(pieces)  # stored once every piece is in

    def get(self, key: str) -> bytes:
        if key not in self._blobs:
            raise NotFound(f"blob {key} not found")
        return self._blobs[key]

    def read_chunks(
        self, key: str, chunk_size: int = 0, *, offset: int = 0, length: int | None = None
    ) -> Iterator[bytes]:
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("a range starts at 0 or later and has a length of 0 or more")
        data = self.get(key)
        data = data[offset:] if length is None else data[offset : offset + length]
        size = chunk_size or 65536
        for start in range(0, len(data), size):
            yield data[start : start + size]

    def exists(self, key: str) -> bool:
        return key in self._blobs

    def delete(self, key: str) -> None:
        self._blobs.pop(key, None)

    def list_keys(self) -> Iterator[str]:
        yield from sorted(self._blobs)

    def incomplete_writes(self) -> Iterator[str]:
        return iter(())  # a dict entry is written whole or not at all

    def presign_get(
        self, key: str, lifetime: timedelta, *, content_type: str, content_disposition: str
    ) -> str | None:
        return None


class SignatureScanner:
    """The MalwareScanner port over a table of known-bad files (whole-content
    match, as ClamAV's hash signatures; passes tests/conformance/test_malware_scanner.py)."""

    def __init__(self, signatures: dict[bytes, str], reachable: bool = True) -> None:
        self.signatures = signatures
        self.reachable = reachable

    def scan(self, pieces: Iterable[bytes]) -> ScanVerdict:
        if not self.reachable:
            raise EngineUnavailable("the fake scanner is set to be unreachable")
        data = b"".join(pieces)
        name = self.signatures.get(data)
        if name is not None:
            return ScanInfected(f"{name}.UNOFFICIAL", "fake")
        return ScanClean("fake")


class ScriptedOcr:
    """The OcrProvider port without a model: the image's ground truth travels in
    its PNG text chunks (`ocr-truth`, `ocr-rotation`), written by the tests that
    draw it (passes tests/conformance/test_ocr_provider.py). The size of every
    image it was asked to read is kept in `seen`: which pages a PDF sent to OCR."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def recognize(self, image: bytes) -> OcrResult:
        import io

        from PIL import Image

        with Image.open(io.BytesIO(image)) as opened:
            truth = [t for t in opened.info.get("ocr-truth", "").split("\n") if t]
            rotation = int(opened.info.get("ocr-rotation", "0")) % 360
            width, height = opened.size
        self.seen.append((width, height))
        if rotation in (90, 270):
            width, height = height, width
        lines = tuple(
            OcrLine(text, 0.95, (10, 10 + 40 * n, min(width, 10 + 20 * len(text)), 40 + 40 * n))
            for n, text in enumerate(truth)
        )
        return OcrResult(
            paragraphs=(lines,) if lines else (),
            mean_confidence=0.95 if lines else 0.0,
            rotation_degrees=rotation,
            width=width,
            height=height,
        )


class InMemoryFileMetadata:
    """The FileMetadataStore port in lists (passes tests/conformance/test_file_metadata.py)."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, tuple[str, ...], FileVersionInfo]] = []
        # (tenant, origin, subjects, version)

    def add(
        self,
        tenant_id: str,
        origin: str,
        filename: str,
        sha256: str,
        size: int,
        media_type: str,
        subjects: Sequence[str],
    ) -> str:
        earlier = [r for r in self.rows if r[0] == tenant_id and r[1] == origin]
        source_id = earlier[0][3].source_id if earlier else f"src_{uuid.uuid4().hex}"
        self.rows = [
            (
                t,
                o,
                s,
                dataclasses.replace(v, is_current=False) if o == origin and t == tenant_id else v,
            )
            for t, o, s, v in self.rows
        ]
        info = FileVersionInfo(
            source_id=source_id,
            version_id=f"ver_{uuid.uuid4().hex}",
            version_no=len(earlier) + 1,
            filename=filename,
            declared_type="",
            sniffed_type=media_type,
            size_bytes=size,
            sha256=sha256,
            state="stored",
            processing_state="pending",
            failure_reason=None,
            low_confidence=False,
            is_current=True,
            created_at=datetime.now(UTC),
        )
        self.rows.append((tenant_id, origin, tuple(subjects), info))
        return source_id

    def _visible(self, scope: AccessScope) -> list[tuple[str, FileVersionInfo]]:
        if not scope.subjects:
            return []
        return [
            (o, v)
            for t, o, s, v in self.rows
            if t == scope.tenant_id and set(s) & set(scope.subjects)
        ]

    def list_files(self, scope: AccessScope, cursor: str | None, limit: int) -> FilePage:
        limit = max(1, min(limit, FILES_MAX_PAGE))
        rows = sorted(
            (v for _, v in self._visible(scope)),
            key=lambda v: (v.created_at, v.version_id),
            reverse=True,
        )
        if cursor:
            after = decode_cursor(cursor)
            rows = [v for v in rows if (v.created_at, v.version_id) < after]
        page = tuple(rows[:limit])
        more = len(rows) > limit
        return FilePage(
            page, encode_cursor(page[-1].created_at, page[-1].version_id) if more else None
        )

    def versions(self, scope: AccessScope, source_id: str) -> list[FileVersionInfo] | None:
        found = [v for _, v in self._visible(scope) if v.source_id == source_id]
        return sorted(found, key=lambda v: v.version_no) or None

    def origin_of(self, scope: AccessScope, source_id: str) -> tuple[str, str] | None:
        for origin, v in self._visible(scope):
            if v.source_id == source_id:
                return origin, v.filename
        return None


class ScriptedTranscriber:
    """The TranscriptionProvider port without a model: transcripts are registered
    by the media's sha256; durations come from the WAV header (passes
    tests/conformance/test_transcription_provider.py)."""

    def __init__(self, transcripts: dict[str, tuple[TranscriptSegment, ...]]) -> None:
        self.transcripts = transcripts

    def duration_seconds(self, media: bytes) -> float:
        import io
        import wave

        with wave.open(io.BytesIO(media)) as audio:
            return audio.getnframes() / audio.getframerate()

    def transcribe(self, media: bytes, filename: str) -> tuple[TranscriptSegment, ...]:
        return self.transcripts.get(hashlib.sha256(media).hexdigest(), ())


@dataclasses.dataclass
class FakeSource:
    tenant_id: str
    subjects: tuple[str, ...]
    current_version_id: str
    active: bool = True


@dataclasses.dataclass(frozen=True)
class FakeChunk:
    tenant_id: str
    source_id: str
    content_hash: str


_ROLE_ROWS = ("primary", "preview", "source")


class InMemoryArtifacts:
    """The ArtifactStore and ExportStore ports in dicts, over shared maps of
    sources and chunks (passes tests/conformance/test_artifact_store.py): the generation
    moves only in commit_version, under one lock; reads answer None / [] for
    hidden and missing alike; one export row per (tenant, artifact,
    generation, format), a failed one reclaimed."""

    def __init__(
        self, sources: dict[str, FakeSource], chunks: dict[str, FakeChunk] | None = None
    ) -> None:
        self.sources = sources
        self.chunks = chunks if chunks is not None else {}
        self._lock = threading.Lock()
        self._artifacts: dict[str, tuple[str, str, int, datetime]] = {}
        self._versions: dict[str, list[ArtifactVersion]] = {}
        self._files: list[ArtifactFile] = []
        self._exports: dict[tuple[str, str, int, str], dict[str, Any]] = {}
        self._purges: dict[
            tuple[str, str], list[Any]
        ] = {}  # (tenant, key) -> [artifact, tries, error]

    def commit_version(
        self,
        tenant_id: str,
        artifact_id: str,
        source_id: str,
        expected_generation: int,
        source_version_id: str,
        provenance: dict[str, Any],
        restored_from: int | None,
        summary: Sequence[str],
        files: Sequence[NewFile],
    ) -> int:
        if not {"tool", "inputs", "run", "derived_from"} <= set(provenance):
            raise StoreError("an artifact version needs tool, inputs, run and derived_from")
        with self._lock:
            if expected_generation == 0 and artifact_id not in self._artifacts:
                self._artifacts[artifact_id] = (tenant_id, source_id, 0, datetime.now(UTC))
            row = self._artifacts.get(artifact_id)
            if row is None or row[0] != tenant_id or row[2] != expected_generation:
                raise StaleGenerationError(row[2] if row else 0)
            generation = expected_generation + 1
            self._artifacts[artifact_id] = (tenant_id, source_id, generation, row[3])
            self._versions.setdefault(artifact_id, []).append(
                ArtifactVersion(
                    generation,
                    source_version_id,
                    dict(provenance),
                    restored_from,
                    tuple(summary),
                    datetime.now(UTC),
                    f"sha256/{source_version_id}",
                    source_version_id,
                )
            )
            self.sources[source_id].current_version_id = source_version_id
            superseded = [
                f for f in self._files if f.artifact_id == artifact_id and f.role in _ROLE_ROWS
            ]
            self._files = [f for f in self._files if f not in superseded]
            for old in superseded:
                self._purges.setdefault((tenant_id, old.blob_key), [artifact_id, 0, None])
            for f in files:
                self._add_file(artifact_id, generation, f)
            return generation

    def queued_purges(self, tenant_id: str, artifact_id: str | None = None) -> list[str]:
        return [
            key
            for (tenant, key), row in self._purges.items()
            if tenant == tenant_id and artifact_id in (None, row[0])
        ]

    def blob_referenced(self, blob_key: str) -> bool:
        versions = (v.blob_key for vs in self._versions.values() for v in vs)
        return any(f.blob_key == blob_key for f in self._files) or blob_key in versions

    def finish_purge(self, tenant_id: str, blob_key: str, error: str | None) -> None:
        if error is None:
            self._purges.pop((tenant_id, blob_key), None)
        elif (tenant_id, blob_key) in self._purges:
            row = self._purges[(tenant_id, blob_key)]
            row[1], row[2] = int(row[1] or 0) + 1, error

    def discard_version(self, tenant_id: str, source_id: str, version_id: str) -> str | None:
        return None  # the fake's versions are the committed ones only

    def _add_file(self, artifact_id: str, generation: int, f: NewFile) -> str:
        file_id = f"afl_{uuid.uuid4().hex}"
        self._files.append(
            ArtifactFile(
                file_id,
                artifact_id,
                generation,
                f.role,
                f.format,
                f.media_type,
                f.blob_key,
                f.sha256,
                f.size_bytes,
            )
        )
        return file_id

    def get(self, scope: AccessScope, artifact_id: str) -> ArtifactRecord | None:
        row = self._artifacts.get(artifact_id)
        if row is None or row[0] != scope.tenant_id or row[2] == 0:
            return None
        source = self.sources[row[1]]
        if not source.active or not set(source.subjects) & set(scope.subjects):
            return None
        return ArtifactRecord(
            artifact_id,
            row[0],
            row[1],
            "markdown",
            row[2],
            f"{artifact_id}.md",
            source.subjects,
            source.current_version_id,
            None,
            row[3],
        )

    def versions(self, scope: AccessScope, artifact_id: str) -> list[ArtifactVersion]:
        if self.get(scope, artifact_id) is None:
            return []
        return list(self._versions.get(artifact_id, []))

    def files(self, scope: AccessScope, artifact_id: str, generation: int) -> list[ArtifactFile]:
        if self.get(scope, artifact_id) is None:
            return []
        return sorted(
            (f for f in self._files if f.artifact_id == artifact_id and f.generation == generation),
            key=lambda f: (f.role, f.format),
        )

    def file(self, scope: AccessScope, file_id: str) -> ArtifactFile | None:
        found = next((f for f in self._files if f.file_id == file_id), None)
        if found is None or self.get(scope, found.artifact_id) is None:
            return None
        return found

    def cited_chunks(self, tenant_id: str, chunk_ids: Sequence[str]) -> dict[str, CitedChunk]:
        found: dict[str, CitedChunk] = {}
        for chunk_id in chunk_ids:
            chunk = self.chunks.get(chunk_id)
            if chunk is None or chunk.tenant_id != tenant_id:
                continue
            source = self.sources.get(chunk.source_id)
            found[chunk_id] = CitedChunk(chunk.content_hash, bool(source and source.active))
        return found

    def cited_sources(self, tenant_id: str, source_ids: Sequence[str]) -> dict[str, CitedSource]:
        return {
            source_id: CitedSource(source.current_version_id, source.active)
            for source_id in source_ids
            if (source := self.sources.get(source_id)) is not None and source.tenant_id == tenant_id
        }

    def claim_export(
        self, tenant_id: str, artifact_id: str, generation: int, fmt: str
    ) -> tuple[dict[str, Any], bool]:
        key = (tenant_id, artifact_id, generation, fmt)
        with self._lock:
            row = self._exports.get(key)
            if row is None:
                row = {
                    "export_id": f"exp_{uuid.uuid4().hex}",
                    "tenant_id": tenant_id,
                    "artifact_id": artifact_id,
                    "generation": generation,
                    "format": fmt,
                    "state": "pending",
                    "file_id": None,
                    "failure_reason": None,
                    "renders": 1,
                }
                self._exports[key] = row
                return dict(row), True
            if row["state"] == "failed":
                row.update(state="pending", failure_reason=None, renders=row["renders"] + 1)
                return dict(row), True
            return dict(row), False

    def finish_export(
        self,
        export: dict[str, Any],
        file: NewFile | None,
        failure: str | None,
        unrenderable: Sequence[str] = (),
        receipt: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        key = (export["tenant_id"], export["artifact_id"], export["generation"], export["format"])
        with self._lock:
            row = self._exports[key]
            if row["state"] == "pending":
                file_id = (
                    self._add_file(export["artifact_id"], export["generation"], file)
                    if file is not None
                    else None
                )
                row.update(
                    state="rendered" if file_id else "failed",
                    file_id=file_id,
                    failure_reason=None if file_id else (failure or "render failed"),
                    unrenderable=list(unrenderable),
                    receipt=receipt,
                )
            return dict(row)

    def wait_export(self, export: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        key = (export["tenant_id"], export["artifact_id"], export["generation"], export["format"])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                row = dict(self._exports[key])
            if row["state"] != "pending":
                return row
            time.sleep(0.02)
        return row


class InMemoryTenantDirectory:
    """The TenantDirectory port in dicts (passes
    tests/conformance/test_tenant_directory.py): secrets kept only as hashes,
    revocation at once, rotation keeps subjects, scopes and label."""

    def __init__(self) -> None:
        self._tenants: dict[str, Tenant] = {}
        self._keys: dict[str, tuple[ApiKeyInfo, str]] = {}  # key_id -> (info, secret hash)
        self._drilldowns: dict[tuple[str, str, str], tuple[int, float]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _hash(secret: str) -> str:
        return hashlib.sha256(secret.encode()).hexdigest()

    def ensure_tenant(self, tenant_id: str, display_name: str, active_model: str) -> Tenant:
        with self._lock:
            return self._tenants.setdefault(
                tenant_id, Tenant(tenant_id, display_name, active_model)
            )

    def get_tenant(self, tenant_id: str) -> Tenant | None:
        return self._tenants.get(tenant_id)

    def list_tenants(self) -> list[Tenant]:
        return [self._tenants[t] for t in sorted(self._tenants)]

    def set_fusion(self, tenant_id: str, fusion: FusionConstants | None) -> bool:
        with self._lock:
            tenant = self._tenants.get(tenant_id)
            if tenant is None:
                return False
            checked = fusion.validated() if fusion is not None else None
            self._tenants[tenant_id] = dataclasses.replace(tenant, fusion=checked)
            return True

    def set_system_corpus(self, tenant_id: str, enabled: bool) -> bool:
        with self._lock:
            tenant = self._tenants.get(tenant_id)
            if tenant is None:
                return False
            self._tenants[tenant_id] = dataclasses.replace(tenant, system_corpus=enabled)
            return True

    def count_drilldown(
        self, tenant_id: str, key_id: str, turn: str, cap: int, window_seconds: int
    ) -> int | None:
        now = time.monotonic()
        with self._lock:
            used, started = self._drilldowns.get((tenant_id, key_id, turn), (0, now))
            if now - started >= window_seconds:
                used, started = 0, now
            if used >= cap:
                return None
            self._drilldowns[(tenant_id, key_id, turn)] = (used + 1, started)
            return used + 1

    def create_api_key(
        self,
        tenant_id: str,
        subjects: Sequence[str],
        label: str,
        scopes: Sequence[str] = DEFAULT_KEY_SCOPES,
    ) -> tuple[str, str]:
        unknown = sorted(set(scopes) - set(ALL_SCOPES))
        if unknown:  # as PostgreSQL's api_keys_scopes_check refuses them
            raise StoreError(f"refused creating an API key: unknown scopes {unknown}")
        key_id, secret = f"key_{uuid.uuid4().hex[:16]}", f"gw_{uuid.uuid4().hex}"
        info = ApiKeyInfo(
            key_id, tenant_id, label, tuple(subjects), tuple(scopes), datetime.now(UTC), None
        )
        with self._lock:
            self._keys[key_id] = (info, self._hash(secret))
        return key_id, secret

    def principal_for_key(self, secret: str) -> Principal | None:
        found = self.authenticate(secret)
        return found.principal if found is not None else None

    def authenticate(self, secret: str) -> Authenticated | None:
        wanted = self._hash(secret)
        for info, hashed in self._keys.values():
            tenant = self._tenants.get(info.tenant_id)
            if hashed == wanted and info.revoked_at is None and tenant is not None:
                principal = Principal(
                    info.tenant_id, info.subjects, info.key_id, scopes=info.scopes
                )
                return Authenticated(principal, tenant)
        return None

    def list_api_keys(self, tenant_id: str) -> list[ApiKeyInfo]:
        return sorted(
            (info for info, _ in self._keys.values() if info.tenant_id == tenant_id),
            key=lambda i: (i.created_at, i.key_id),
        )

    def revoke_api_key(self, tenant_id: str, key_id: str) -> bool:
        with self._lock:
            found = self._keys.get(key_id)
            if found is None or found[0].tenant_id != tenant_id or found[0].revoked_at is not None:
                return False
            self._keys[key_id] = (
                dataclasses.replace(found[0], revoked_at=datetime.now(UTC)),
                found[1],
            )
            return True

    def rotate_api_key(self, tenant_id: str, key_id: str) -> tuple[str, str] | None:
        old = self._keys.get(key_id)
        if old is None or not self.revoke_api_key(tenant_id, key_id):
            return None
        return self.create_api_key(tenant_id, old[0].subjects, old[0].label, old[0].scopes)


class InMemoryRegistrationLedger:
    """The RegistrationLedger port in dicts (passes
    tests/conformance/test_registration_ledger.py): one lock serializes the
    registrations of an origin; versions are `pending` until a compare-and-set
    makes them `stored` (and current) or `quarantined` (never current)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (tenant, origin) -> [source_id, doc_type, current version id or None]
        self._sources: dict[tuple[str, str], list[Any]] = {}
        # version id -> [source key, version_no, sha256, state, source location]
        self._versions: dict[str, list[Any]] = {}

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
        key = (tenant_id, origin)
        with self._lock:
            source = self._sources.get(key)
            is_new = source is None
            if source is None:
                source = [f"src_{uuid.uuid4().hex}", doc_type, None]
                self._sources[key] = source
            elif source[1] != doc_type:
                raise InvalidRequest(f"source {source[0]} is an {source[1]} document")
            elif source[2] is not None:
                current = self._versions[source[2]]
                if current[2] == sha256:
                    return Unchanged(source[0], source[2])
                if not replace:
                    return NeedsApproval(source[0], source[2], current[1])
            number = 1 + max((v[1] for v in self._versions.values() if v[0] == key), default=0)
            version_id = f"ver_{uuid.uuid4().hex}"
            self._versions[version_id] = [key, number, sha256, "pending", tuple(location)]
            return PendingVersion(version_id, source[0], blob_key_for(sha256), is_new)

    def mark_stored(
        self, version_id: str, scan_result: str | None = None, make_current: bool = True
    ) -> bool:
        with self._lock:
            version = self._versions.get(version_id)
            if version is None or version[3] != "pending":
                return False
            version[3] = "stored"
            if make_current:
                self._sources[version[0]][2] = version_id
            return True

    def mark_quarantined(self, version_id: str, signature: str) -> bool:
        with self._lock:
            version = self._versions.get(version_id)
            if version is None or version[3] != "pending":
                return False
            version[3] = "quarantined"
            return True


@dataclasses.dataclass
class _FakeVersion:
    version_id: str
    version_no: int
    filename: str
    processing_state: str = "pending"
    result: ExtractedDocument | ExtractionFailure | None = None


class InMemorySourceReading:
    """The SourceReading port over dicts (passes
    tests/conformance/test_source_reading.py): a scope sees active sources of
    its tenant whose subjects it shares; hidden and missing answer alike."""

    def __init__(self) -> None:
        # source id -> [tenant, subjects, active, versions, current version id]
        self.sources: dict[str, list[Any]] = {}

    def _visible(self, scope: AccessScope, source_id: str) -> list[Any] | None:
        source = self.sources.get(source_id)
        if source is None or not source[2] or not readable_by(source[0], source[1], scope):
            return None
        return source

    def has_accessible_sources(self, scope: AccessScope) -> bool:
        return any(self._visible(scope, s) is not None for s in self.sources)

    def source_status(self, scope: AccessScope, source_id: str) -> dict[str, object] | None:
        source = self._visible(scope, source_id)
        if source is None:
            return None
        version = next(v for v in source[3] if v.version_id == source[4])
        failure = version.result if isinstance(version.result, ExtractionFailure) else None
        return {
            "source_id": source_id,
            "version_id": version.version_id,
            "version_no": version.version_no,
            "filename": version.filename,
            "processing_state": version.processing_state,
            "failure_reason": failure.reason.value if failure else None,
            "published": False,
        }

    def current_extraction(
        self, scope: AccessScope, source_id: str, version_no: int | None = None
    ) -> tuple[str, ExtractedDocument | ExtractionFailure | None] | None:
        source = self._visible(scope, source_id)
        if source is None:
            return None
        version = next(
            (
                v
                for v in source[3]
                if (v.version_id == source[4] if version_no is None else v.version_no == version_no)
            ),
            None,
        )
        return None if version is None else (version.version_id, version.result)
