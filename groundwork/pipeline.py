"""Stage functions: registration -> extraction -> chunks -> indexes -> publication.

Each stage asks the catalog what needs doing, does it, and records that it is
done, so every stage is incremental and idempotent. Dagster assets are thin
wrappers around these functions.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from groundwork.catalog import (
    Catalog,
    ChunkBatch,
    NeedsApproval,
    SummaryDrift,
    Unchanged,
    VersionRecord,
)
from groundwork.chunking import ChunkingPolicy, chunk_blocks
from groundwork.documents import (
    ExtractedDocument,
    ExtractionFailure,
    ExtractionLimits,
    ExtractionResult,
    FailureReason,
)
from groundwork.errors import DimensionMismatch, DocumentRefused, NotFound
from groundwork.extract import extract
from groundwork.ports import (
    BlobStore,
    EmbeddingProvider,
    KeywordIndex,
    MalwareScanner,
    ScanInfected,
    VectorIndex,
    VectorRecord,
)
from groundwork.summaries import Summarizer, SummaryTarget, compile_summary


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


@dataclass(frozen=True, slots=True)
class Registration:
    source_id: str
    version_id: str
    created: bool  # False when the bytes were already the current version
    quarantined: str | None = None  # the signature, when a scan found malware


@dataclass(frozen=True, slots=True)
class IncomingFile:
    """What registration needs to know about bytes before writing them."""

    tenant_id: str
    origin: str
    filename: str
    subjects: Sequence[str]
    media_type: str  # sniffed from content
    declared_type: str = ""  # what the uploader claimed
    replace: bool = True  # False: an existing source with other content needs approval
    doc_type: str = "file"  # "artifact" documents change only through the artifact writer
    make_current: bool = True  # False: the caller moves the current pointer itself


def blob_key_for(sha256: str) -> str:
    """Content-addressed: identical bytes are stored once and never rewritten."""
    return f"sha256/{sha256[:2]}/{sha256}"


def register_file(
    catalog: Catalog,
    blobs: BlobStore,
    *,
    tenant_id: str,
    origin: str,
    filename: str,
    data: bytes,
    subjects: Sequence[str],
    media_type: str,
    scanner: MalwareScanner | None = None,
) -> Registration:
    """Register bytes held in memory (folder sync, small API bodies)."""
    incoming = IncomingFile(tenant_id, origin, filename, subjects, media_type)
    outcome = register_incoming(
        catalog,
        blobs,
        incoming,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        write=lambda key: blobs.put(key, data),
        scanner=scanner,
    )
    assert isinstance(outcome, Registration)  # replace=True never needs approval
    return outcome


def register_path(
    catalog: Catalog,
    blobs: BlobStore,
    incoming: IncomingFile,
    path: Path,
    scanner: MalwareScanner | None = None,
) -> Registration | NeedsApproval:
    """Register a file on local disk (a completed upload) without reading it
    into memory: hashed in pieces, stored by streaming."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while piece := handle.read(1024 * 1024):
            digest.update(piece)
    return register_incoming(
        catalog,
        blobs,
        incoming,
        sha256=digest.hexdigest(),
        size=path.stat().st_size,
        write=lambda key: blobs.put_file(key, path),
        scanner=scanner,
    )


def register_incoming(
    catalog: Catalog,
    blobs: BlobStore,
    incoming: IncomingFile,
    *,
    sha256: str,
    size: int,
    write: Callable[[str], None],
    scanner: MalwareScanner | None = None,
) -> Registration | NeedsApproval:
    """Write order: version row `pending` -> bytes -> (scan) -> compare-and-set
    `stored` (or `quarantined`). A crash between leaves a pending row for
    reconciliation, never bytes that nothing references; with scanning on, a
    version is `stored` only after a clean scan, and a scanner that cannot
    answer leaves it `pending` (the error propagates)."""
    begun = catalog.begin_version(
        incoming.tenant_id,
        incoming.origin,
        incoming.filename,
        incoming.subjects,
        sha256,
        size,
        incoming.media_type,
        declared_type=incoming.declared_type,
        replace=incoming.replace,
        doc_type=incoming.doc_type,
    )
    if isinstance(begun, NeedsApproval):
        return begun
    if isinstance(begun, Unchanged):
        return Registration(begun.source_id, begun.version_id, created=False)
    write(begun.blob_key)
    if scanner is not None:
        verdict = scanner.scan(_pieces(blobs, begun.blob_key))
        if isinstance(verdict, ScanInfected):
            catalog.mark_quarantined(begun.version_id, f"{verdict.engine}:{verdict.signature}")
            return Registration(
                begun.source_id, begun.version_id, created=True, quarantined=verdict.signature
            )
        catalog.mark_stored(
            begun.version_id, f"{verdict.engine}:clean", make_current=incoming.make_current
        )
    else:
        catalog.mark_stored(begun.version_id, make_current=incoming.make_current)
    return Registration(begun.source_id, begun.version_id, created=True)


def _pieces(blobs: BlobStore, key: str) -> Iterator[bytes]:
    yield from blobs.read_chunks(key)


Extractor = Callable[[bytes, str, str, ExtractionLimits | None], ExtractionResult]


def _in_process(
    data: bytes, media_type: str, filename: str, limits: ExtractionLimits | None
) -> ExtractionResult:
    return extract(data, media_type, filename, limits)


def extract_pending(
    catalog: Catalog,
    blobs: BlobStore,
    tenant_id: str,
    limits: ExtractionLimits | None = None,
    batch: int = 500,
    extractors: Sequence[Extractor] = (_in_process,),
) -> StageReport:
    """`extractors` default to one in-process; the pipeline passes killable
    worker processes (so the timeout is enforced from outside the parser), one
    per core it is given: documents fan out over them, one thread each waiting
    on its worker, so a large tenant's first ingest uses every core. The
    catalog's claim keeps two workers off one version; a document's failure is
    its own and the other workers go on."""
    if not extractors:
        raise ValueError("extract_pending needs at least one extractor")
    report = StageReport()
    tally = threading.Lock()
    started = time.monotonic()
    seen: set[str] = set()
    while versions := [
        v for v in catalog.versions_to_extract(tenant_id, batch) if v.version_id not in seen
    ]:
        seen.update(v.version_id for v in versions)
        _fan_out(
            versions,
            extractors,
            lambda version, extractor: _extract_one(
                catalog, blobs, version, limits, report, extractor, tally
            ),
        )
    report.seconds = time.monotonic() - started
    return report


def _fan_out(
    versions: Sequence[VersionRecord],
    extractors: Sequence[Extractor],
    work: Callable[[VersionRecord, Extractor], None],
) -> None:
    """Each extractor takes the next waiting version until none is left; an
    infrastructure error in one (raised, not a document's failure value) stops
    the others after their current document and is raised here."""
    workers = extractors[: len(versions)]
    if len(workers) == 1:
        for version in versions:
            work(version, workers[0])
        return
    waiting = deque(versions)
    stop = threading.Event()

    def drain(extractor: Extractor) -> None:
        while not stop.is_set():
            try:
                version = waiting.popleft()
            except IndexError:
                return
            try:
                work(version, extractor)
            except BaseException:
                stop.set()
                raise

    with ThreadPoolExecutor(len(workers), thread_name_prefix="extract") as pool:
        for done in [pool.submit(drain, extractor) for extractor in workers]:
            done.result()


def _extract_one(
    catalog: Catalog,
    blobs: BlobStore,
    version: VersionRecord,
    limits: ExtractionLimits | None,
    report: StageReport,
    extractor: Extractor,
    tally: threading.Lock,
) -> None:
    if not catalog.claim_extraction(version.version_id):
        with tally:
            report.skipped += 1
        return
    try:
        data = blobs.get(version.blob_key)
    except NotFound:
        # The bytes can no longer be loaded: record it on the version instead of
        # failing (and retrying) the run forever.
        result: ExtractionResult = ExtractionFailure(
            FailureReason.MALFORMED, "the original bytes are missing from the blob store"
        )
    else:
        result = extractor(data, version.media_type, version.filename, limits)
    catalog.save_extraction(version.version_id, result)
    with tally:
        if isinstance(result, ExtractionFailure):
            report.failed += 1
            report.failures[version.filename] = result.reason.value
        else:
            report.processed += 1
            report.items += len(result.blocks)


def chunk_pending(
    catalog: Catalog,
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


def summarize_pending(
    catalog: Catalog,
    tenant_id: str,
    count_tokens: Callable[[str], int],
    summarizer: Summarizer | None = None,
    max_tokens: int = 256,
    batch: int = 200,
) -> StageReport:
    """Compile the summary page of each chunked version that has none (or whose
    summary the drift check marked stale). The page's chunks are rows of the
    same version in the `summary` layer; the indexes take a version only once
    it is summarized, so both layers are published by the same pointer flip.
    `items` counts summary chunks, `skipped` generative summaries that fell
    back to extractive."""
    report = StageReport()
    started = time.monotonic()
    seen: set[str] = set()
    while pending := [
        item
        for item in catalog.versions_to_summarize(tenant_id, batch)
        if item[0].version_id not in seen
    ]:
        for version, raw in pending:
            seen.add(version.version_id)
            target = SummaryTarget(
                tenant_id, version.source_id, version.version_id, version.title or version.filename
            )
            summary, chunks = compile_summary(target, raw, summarizer, count_tokens, max_tokens)
            catalog.save_summary(version, summary, chunks)
            report.processed += 1
            report.items += len(chunks)
            if summarizer is not None and summarizer.kind != summary.kind:
                # labelled extractive on the version; counted so the run shows it
                report.skipped += 1
    report.seconds = time.monotonic() - started
    return report


def summary_drift(catalog: Catalog, tenant_id: str) -> list[SummaryDrift]:
    """Find summaries whose raw chunks changed since compilation and mark them
    for recompilation (the summary stage recompiles them on its next run)."""
    drifted = catalog.summary_drift(tenant_id)
    if drifted:
        catalog.mark_summaries_stale(
            tenant_id,
            [d.version_id for d in drifted],
            "the raw chunks changed since the summary was compiled",
        )
    return drifted


def keyword_index_pending(
    catalog: Catalog, keywords: KeywordIndex, tenant_id: str, batch: int = 200
) -> StageReport:
    report = StageReport()
    started = time.monotonic()
    while items := catalog.batches_to_keyword_index(tenant_id, batch):
        # Written hidden, beside the published version's documents: those stay
        # searchable until publication switches, and leave after it.
        try:
            report.items += keywords.upsert([c for item in items for c in item.chunks])
            written = list(items)
        except DocumentRefused:
            # One version's text must not fail the others: write them one by
            # one and fail only the versions the index refuses. Anything that is
            # not a refusal (the engine down, overloaded) still fails the run.
            written = []
            for item in items:
                try:
                    report.items += keywords.upsert(list(item.chunks))
                except DocumentRefused as refused:
                    _fail_version(catalog, item.version, str(refused), report)
                else:
                    written.append(item)
        catalog.mark_keyword_indexed_many([item.version.version_id for item in written])
        report.processed += len(written)
    report.seconds = time.monotonic() - started
    return report


def _fail_version(
    catalog: Catalog, version: VersionRecord, detail: str, report: StageReport
) -> None:
    """A store refused this version's text: record it on the version (it leaves
    every stage's work) so the rest of the tenant goes on."""
    catalog.mark_version_failed(version.version_id, FailureReason.UNINDEXABLE, detail)
    report.failed += 1
    report.failures[version.filename] = FailureReason.UNINDEXABLE.value


def _write_finished(
    catalog: Catalog,
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
            _fail_version(catalog, item.version, str(refused), report)
            continue
        catalog.mark_embedded(item.version.version_id, item.version.tenant_id, vectors.model.key)
        report.processed += 1
        report.items += len(records)
        report.reused += sum(1 for c in item.chunks if c.content_hash not in embedded_now)
    return still


def embed_pending(
    catalog: Catalog,
    vectors: VectorIndex,
    embedder: EmbeddingProvider,
    tenant_id: str,
    batch: int = 200,
    embed_batch: int = 32,
) -> StageReport:
    if embedder.model.key != vectors.model.key:
        raise DimensionMismatch(
            f"embedder model {embedder.model.key} does not match index model {vectors.model.key}"
        )
    report = StageReport()
    started = time.monotonic()
    model_key = vectors.model.key
    while items := catalog.batches_to_embed(tenant_id, model_key, batch):
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


def publish_ready(
    catalog: Catalog,
    vectors: VectorIndex,
    keywords: KeywordIndex,
    tenant_id: str,
    other_vectors: Sequence[VectorIndex] = (),
) -> StageReport:
    """Atomic publication. Order: (1) the new versions' rows become live in both
    stores, beside the published versions' (every read of chunk text joins the
    catalog's published pointer, so nothing changes for a search yet);
    (2) the pointer flips in one Postgres transaction: searches now see the new
    versions, whole; (3) superseded versions' rows leave the indexes, then
    their chunk rows. Each step is idempotent and (3) is derived from the
    catalog, so a crash anywhere is finished by the next run."""
    report = StageReport()
    started = time.monotonic()
    model_key = vectors.model.key
    ready = catalog.versions_to_publish(tenant_id, model_key)
    for start in range(0, len(ready), 500):
        batch = [v.version_id for v in ready[start : start + 500]]
        report.items += keywords.set_versions_live(tenant_id, batch, True)
        vectors.set_versions_live(tenant_id, batch, True)
        catalog.mark_published_many(batch, model_key)
        report.processed += len(batch)
    retire_superseded(catalog, vectors, keywords, tenant_id, other_vectors)
    report.seconds = time.monotonic() - started
    return report


#: How long a version a pointer just left keeps its chunk rows. A search reads
#: its legs (the indexes) and then re-checks chunk rows against the pointers;
#: one whose legs ran just before a switch re-checks just after it and is
#: answered from the previous version (see the catalog's load_chunks) instead
#: of coming back empty. Searches take well under a second; 30 s is margin.
RETIRE_GRACE_SECONDS = 30.0


def retire_superseded(
    catalog: Catalog,
    vectors: VectorIndex,
    keywords: KeywordIndex,
    tenant_id: str,
    other_vectors: Sequence[VectorIndex] = (),
    grace_seconds: float = RETIRE_GRACE_SECONDS,
) -> int:
    """Remove what no published pointer or current version needs any more:
    this model's vectors of versions it no longer serves, then (for versions no
    model serves) every store's rows, chunk rows last (after the grace window;
    a later run finishes them)."""
    stale_here = catalog.superseded_versions(tenant_id, vectors.model.key)
    vectors.delete_versions(tenant_id, stale_here)
    unused = catalog.superseded_versions(tenant_id, None)
    if unused:
        keywords.delete_versions(tenant_id, unused)
        for index in other_vectors:
            index.delete_versions(tenant_id, unused)
        catalog.drop_version_chunks(tenant_id, unused, grace_seconds)
    return len(unused)


@dataclass(frozen=True, slots=True)
class StoreAgreement:
    expected: int
    missing_from_vectors: tuple[str, ...]
    missing_from_keywords: tuple[str, ...]
    unexpected_in_vectors: tuple[str, ...]
    unexpected_in_keywords: tuple[str, ...]

    @property
    def agrees(self) -> bool:
        return not (
            self.missing_from_vectors
            or self.missing_from_keywords
            or self.unexpected_in_vectors
            or self.unexpected_in_keywords
        )


def store_agreement(
    catalog: Catalog, vectors: VectorIndex, keywords: KeywordIndex, tenant_id: str
) -> StoreAgreement:
    """What is live in each store equals what the catalog says is published."""
    expected = catalog.live_chunk_ids(tenant_id, vectors.model.key)
    # the keyword index is shared: it holds what any model publishes
    expected_keywords = catalog.live_chunk_ids(tenant_id, None)
    in_vectors = vectors.chunk_ids(tenant_id, live_only=True)
    in_keywords = keywords.chunk_ids(tenant_id, live_only=True)
    return StoreAgreement(
        expected=len(expected),
        missing_from_vectors=tuple(sorted(expected - in_vectors))[:50],
        missing_from_keywords=tuple(sorted(expected - in_keywords))[:50],
        unexpected_in_vectors=tuple(sorted(in_vectors - expected))[:50],
        unexpected_in_keywords=tuple(sorted(in_keywords - expected_keywords))[:50],
    )


__all__ = [
    "ExtractedDocument",
    "Registration",
    "StageReport",
    "StoreAgreement",
    "blob_key_for",
    "chunk_pending",
    "embed_pending",
    "extract_pending",
    "keyword_index_pending",
    "publish_ready",
    "retire_superseded",
    "register_file",
    "store_agreement",
    "summarize_pending",
    "summary_drift",
]
