"""Registration: bytes become an immutable source version.

Folder sync, API registration and uploads all call `register_incoming` (through
`register_file` / `register_path`), so the write order below is written once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from groundwork.catalog import (
    NeedsApproval,
    RegistrationLedger,
    Unchanged,
)
from groundwork.ports import (
    BlobStore,
    MalwareScanner,
    ScanInfected,
)


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
    #: where a connector found these bytes (groundwork/connectors/location.py,
    #: bounded): stored on the version, shown in its citations; () for uploads
    location: tuple[tuple[str, str], ...] = ()


def blob_key_for(sha256: str) -> str:
    """Content-addressed: identical bytes are stored once and never rewritten."""
    return f"sha256/{sha256[:2]}/{sha256}"


def register_file(
    catalog: RegistrationLedger,
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
    catalog: RegistrationLedger,
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
    catalog: RegistrationLedger,
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
        location=incoming.location,
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
