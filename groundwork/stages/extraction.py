"""Extraction: stored versions become structured blocks, one document's failure its own."""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from groundwork.catalog import (
    StageProgress,
    VersionRecord,
    VersionShard,
)
from groundwork.documents import (
    ExtractionFailure,
    ExtractionLimits,
    ExtractionResult,
    FailureReason,
)
from groundwork.errors import NotFound
from groundwork.extract import extract
from groundwork.ports import (
    BlobStore,
)
from groundwork.stages.report import StageReport

#: an extractor gets the bytes, or (a large object) the local file they were
#: spooled to: the extraction worker reads it in its own memory-capped process
Extractor = Callable[[bytes | Path, str, str, ExtractionLimits | None], ExtractionResult]
#: objects up to this size are read into memory; larger ones are spooled to a
#: temporary file in pieces, so the pipeline's process never holds one whole
SPOOL_ABOVE = 8 * 1024 * 1024


def _in_process(
    data: bytes | Path, media_type: str, filename: str, limits: ExtractionLimits | None
) -> ExtractionResult:
    if isinstance(data, Path):
        data = data.read_bytes()
    return extract(data, media_type, filename, limits)


@contextlib.contextmanager
def spooled(blobs: BlobStore, key: str) -> Iterator[bytes | Path]:
    """The object's bytes when small, else a temporary file holding them,
    written piece by piece as the store streams them (removed afterwards).
    NotFound when the key is missing."""
    held: list[bytes] = []
    size = 0
    pieces = iter(blobs.read_chunks(key))
    for piece in pieces:
        held.append(piece)
        size += len(piece)
        if size > SPOOL_ABOVE:
            break
    else:
        yield b"".join(held)
        return
    with tempfile.TemporaryDirectory(prefix="groundwork-extract-") as folder:
        path = Path(folder) / "object"
        with path.open("wb") as out:
            for piece in held:
                out.write(piece)
            held.clear()
            for piece in pieces:
                out.write(piece)
        yield path


def extract_pending(
    catalog: StageProgress,
    blobs: BlobStore,
    tenant_id: str,
    limits: ExtractionLimits | None = None,
    batch: int = 500,
    extractors: Sequence[Extractor] = (_in_process,),
    shard: VersionShard | None = None,
) -> StageReport:
    """`extractors` default to one in-process; the pipeline passes killable
    worker processes (so the timeout is enforced from outside the parser), one
    per core it is given: documents fan out over them, one thread each waiting
    on its worker, so a large tenant's first ingest uses every core. The
    catalog's claim keeps two workers off one version; a document's failure is
    its own and the other workers go on. With `shard`, only that slice of the
    waiting versions: a distributed run extracts each slice on its own host."""
    if not extractors:
        raise ValueError("extract_pending needs at least one extractor")
    report = StageReport()
    tally = threading.Lock()
    started = time.monotonic()
    seen: set[str] = set()
    while versions := [
        v for v in catalog.versions_to_extract(tenant_id, batch, shard) if v.version_id not in seen
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
    catalog: StageProgress,
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
        with spooled(blobs, version.blob_key) as data:
            result: ExtractionResult = extractor(data, version.media_type, version.filename, limits)
    except NotFound:
        # The bytes can no longer be loaded: record it on the version instead of
        # failing (and retrying) the run forever.
        result = ExtractionFailure(
            FailureReason.MALFORMED, "the original bytes are missing from the blob store"
        )
    catalog.save_extraction(version.version_id, result)
    with tally:
        if isinstance(result, ExtractionFailure):
            report.failed += 1
            report.failures[version.filename] = result.reason.value
        else:
            report.processed += 1
            report.items += len(result.blocks)
