"""Sources for every transport: processing status, reading windows (of
blocks, and of text by byte offset), tables, the extracted document, image
analysis, file listings, deletion, permission and tag changes, and references
to a version's bytes with the reads through them.

Every read takes the caller's scope: a source that is hidden answers the same
not_found as one that does not exist (no oracle). A reference is the only way
a version's bytes leave the platform; the storage key never does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from groundwork import lifecycle
from groundwork.compare import compare_blocks
from groundwork.documents import (
    FAILURE_GUIDANCE,
    ExtractedDocument,
    ExtractionFailure,
    FailureReason,
)
from groundwork.errors import CapabilityUnavailable, NotFound, Refused
from groundwork.files import MAX_PAGE, FilePage, FileVersionInfo, stored_version
from groundwork.ports import AccessScope, Principal
from groundwork.reading import (
    MAX_WINDOW_BLOCKS,
    MAX_WINDOW_CHARS,
    LocatedTable,
    ReadResult,
    extract_tables,
    read_document,
)
from groundwork.render.markdown import to_markdown
from groundwork.services import tenant_wall
from groundwork.services.file_links import clamped_lifetime, presigned_read
from groundwork.services.platform import PlatformPorts, WalledPlatform
from groundwork.signing import MAX_LIFETIME, sign, verify
from groundwork.signing import Refused as ReferenceRefused

Clock = Callable[[], datetime]
#: at most this many tables in one answer
MAX_TABLES = 200
#: where a reference's token is read back (the proxied read: never a storage URL)
PROXIED_READ = "/v1/files/"
#: stored bytes that are text already: read as stored, not as the extracted Markdown
TEXT_TYPES = frozenset({"text/markdown", "text/plain", "text/csv", "text/html"})
#: OCR lines in one image analysis
MAX_OCR_LINES = 2000


def _now() -> datetime:
    return datetime.now(UTC)


def _not_visible(source_id: str) -> NotFound:
    return NotFound(f"no source {source_id} is visible to this key")


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """The current version's processing state, and what to do about a failure."""

    source_id: str
    version_id: str
    version_no: int
    filename: str
    media_type: str
    processing_state: str
    failure_reason: str | None
    failure_guidance: str | None
    published: bool
    low_confidence: bool
    warnings: tuple[str, ...]


def _reading(ports: PlatformPorts, who: Principal) -> AccessScope:
    """A source is read as searches read: a system corpus document too, while
    the caller's tenant reads that corpus (its passages are cited to it)."""
    return tenant_wall.caller_scope(ports.catalog, who)


def status(ports: PlatformPorts, who: Principal, source_id: str) -> SourceStatus:
    found = ports.catalog.source_status(_reading(ports, who), source_id)
    if found is None:
        raise _not_visible(source_id)
    reason = str(found["failure_reason"]) if found["failure_reason"] else None
    return SourceStatus(
        source_id=str(found["source_id"]),
        version_id=str(found["version_id"]),
        version_no=int(found["version_no"]),  # type: ignore[call-overload]
        filename=str(found["filename"]),
        media_type=str(found["media_type"]),
        processing_state=str(found["processing_state"]),
        failure_reason=reason,
        failure_guidance=FAILURE_GUIDANCE.get(FailureReason(reason)) if reason else None,
        published=bool(found["published"]),
        low_confidence=bool(found["low_confidence"]),
        warnings=tuple(str(w) for w in found.get("warnings") or ()),  # type: ignore[attr-defined]
    )


@dataclass(frozen=True, slots=True)
class Reading:
    version_id: str
    result: ReadResult  # a window of blocks, or why there is nothing to read


def read(
    ports: PlatformPorts,
    who: Principal,
    source_id: str,
    *,
    start_block: int = 0,
    max_blocks: int = MAX_WINDOW_BLOCKS,
    version: int | None = None,
) -> Reading:
    """A window of the version's blocks (the current version unless `version`)."""
    found = ports.catalog.current_extraction(_reading(ports, who), source_id, version)
    if found is None:
        raise _not_visible(source_id)
    version_id, document = found
    return Reading(
        version_id, read_document(document, start_block=start_block, max_blocks=max_blocks)
    )


@dataclass(frozen=True, slots=True)
class SourceTables:
    version_id: str
    tables: tuple[LocatedTable, ...]
    #: why there are none to give: the failure reason, or not-extracted-yet
    reason: str | None = None


def tables(ports: PlatformPorts, who: Principal, source_id: str) -> SourceTables:
    """The current version's tables (at most MAX_TABLES), each with its location."""
    found = ports.catalog.current_extraction(_reading(ports, who), source_id)
    if found is None:
        raise _not_visible(source_id)
    version_id, document = found
    if isinstance(document, ExtractionFailure):
        return SourceTables(version_id, (), document.reason.value)
    if not isinstance(document, ExtractedDocument):
        return SourceTables(version_id, (), "not-extracted-yet")
    return SourceTables(version_id, tuple(extract_tables(document)[:MAX_TABLES]))


def extracted(
    ports: PlatformPorts, who: Principal, source_id: str, version_no: int | None = None
) -> tuple[str, ExtractedDocument]:
    """(version id, document) of a readable extraction. NotFound for a hidden or
    missing source (the same sentence as every other read); refusals:
    `not_ready` (still processing), `unreadable` (with the failure's guidance)."""
    found = ports.catalog.current_extraction(_reading(ports, who), source_id, version_no)
    if found is None:
        raise _not_visible(source_id)
    version_id, document = found
    if document is None:
        raise Refused(
            f"{source_id} is still being processed",
            "call get_file_processing_status and try again when it is extracted",
            code="not_ready",
        )
    if isinstance(document, ExtractionFailure):
        raise Refused(
            f"{source_id} could not be read: {document.reason.value}",
            FAILURE_GUIDANCE.get(document.reason, "upload a readable copy"),
            code="unreadable",
        )
    return version_id, document


@dataclass(frozen=True, slots=True)
class TextWindow:
    version_id: str
    offset: int
    next_offset: int
    total_bytes: int
    #: the window asked for was larger than the limit and was clamped to it
    clamped: bool
    text: str


def _text_bytes(ports: PlatformPorts, who: Principal, source_id: str) -> tuple[str, bytes]:
    current = current_version(ports, who, source_id)
    if current.sniffed_type in TEXT_TYPES:
        found = ports.catalog.readable_version(who.tenant_id, source_id, current.version_id)
        if found is None:
            raise _not_visible(source_id)
        return current.version_id, ports.blobs.get(found[0])
    version_id, document = extracted(ports, who, source_id)
    return version_id, to_markdown(document.blocks).encode()


def read_text(
    ports: PlatformPorts,
    who: Principal,
    source_id: str,
    *,
    offset: int,
    max_bytes: int,
    limit: int,
) -> TextWindow:
    """A window of the file's text by byte offset: the stored bytes of a text
    type, else the extracted Markdown. At most `limit` bytes (a larger ask is
    clamped, not refused) and never a split UTF-8 character. Refusal:
    `invalid` for an offset past the end or inside a character."""
    version_id, data = _text_bytes(ports, who, source_id)
    if offset > len(data):
        raise Refused(
            f"offset {offset} is past the end ({len(data)} bytes)",
            "start at 0 or at a next_offset this tool returned",
            code="invalid",
        )
    if offset < len(data) and (data[offset] & 0xC0) == 0x80:
        raise Refused(
            f"offset {offset} is inside a character",
            "continue from the next_offset the previous call returned",
            code="invalid",
        )
    end = min(offset + min(max_bytes, limit), len(data))
    while end < len(data) and (data[end] & 0xC0) == 0x80:
        end -= 1  # never split a UTF-8 character
    return TextWindow(
        version_id,
        offset,
        end,
        len(data),
        max_bytes > limit,
        data[offset:end].decode("utf-8", errors="replace"),
    )


@dataclass(frozen=True, slots=True)
class CharWindow:
    version_id: str
    text: str
    next_char: int | None  # None: the end of the text
    total_chars: int


def extract_text(
    ports: PlatformPorts, who: Principal, source_id: str, start_char: int = 0
) -> CharWindow:
    """A window of at most MAX_WINDOW_CHARS of the extracted Markdown."""
    version_id, document = extracted(ports, who, source_id)
    text = to_markdown(document.blocks)
    end = min(start_char + MAX_WINDOW_CHARS, len(text))
    return CharWindow(version_id, text[start_char:end], end if end < len(text) else None, len(text))


@dataclass(frozen=True, slots=True)
class TablesWindow:
    version_id: str
    start: int
    tables: tuple[LocatedTable, ...]
    next_table: int | None  # None: no more tables


def tables_window(
    ports: PlatformPorts, who: Principal, source_id: str, start: int, size: int
) -> TablesWindow:
    """At most `size` of the extracted document's tables from `start`."""
    version_id, document = extracted(ports, who, source_id)
    found = extract_tables(document)
    window = tuple(found[start : start + size])
    following = start + len(window)
    return TablesWindow(version_id, start, window, following if following < len(found) else None)


def compare(
    ports: PlatformPorts,
    who: Principal,
    first: tuple[str, int | None],
    second: tuple[str, int | None],
) -> dict[str, Any]:
    """Section-level differences between two readable documents, each a
    (source id, version number or None for the current one)."""
    _, a = extracted(ports, who, *first)
    _, b = extracted(ports, who, *second)
    return compare_blocks(a.blocks, b.blocks)


@dataclass(frozen=True, slots=True)
class OcrLine:
    text: str
    confidence: float | None
    location: str


@dataclass(frozen=True, slots=True)
class ImageAnalysis:
    version_id: str
    lines: tuple[OcrLine, ...]
    mean_confidence: float | None
    #: a vision model's description, when one is configured
    description: str | None
    description_status: str


def analyze_image(ports: PlatformPorts, who: Principal, source_id: str) -> ImageAnalysis:
    """The OCR'd lines of an image or scan with their confidence, and a vision
    model's description when one is configured (its absence is a status, not
    a failure). Refusal: `invalid` for a file that is neither."""
    current = current_version(ports, who, source_id)
    if not (current.sniffed_type.startswith("image/") or current.sniffed_type == "application/pdf"):
        raise Refused(
            f"{source_id} is {current.sniffed_type}, not an image or scan",
            "use read_file or scan_document for documents",
            code="invalid",
        )
    version_id, document = extracted(ports, who, source_id)
    lines = tuple(
        OcrLine(b.text, b.confidence, b.location.label()) for b in document.blocks if b.text.strip()
    )
    confidences = [b.confidence for b in document.blocks if b.confidence is not None]
    description, status = None, "available"
    try:
        blob = ports.catalog.readable_version(who.tenant_id, source_id, current.version_id)
        if blob is None:
            raise _not_visible(source_id)
        described = ports.vision().describe(ports.blobs.get(blob[0]))
        description = f"[description by {described.model}] {described.text}"
    except CapabilityUnavailable as exc:
        status = f"unavailable: {exc}"
    return ImageAnalysis(
        version_id,
        lines[:MAX_OCR_LINES],
        sum(confidences) / len(confidences) if confidences else None,
        description,
        status,
    )


def list_files(
    ports: PlatformPorts, who: Principal, cursor: str | None, limit: int
) -> tuple[FilePage, int]:
    """File versions the caller may see, newest first, keyset-paged; and the
    limit as applied (clamped to MAX_PAGE)."""
    return ports.files.list_files(who.scope, cursor, limit), min(limit, MAX_PAGE)


def versions(ports: PlatformPorts, who: Principal, source_id: str) -> list[FileVersionInfo]:
    """Every version of a source, oldest first (replaced versions stay readable)."""
    found = ports.files.versions(who.scope, source_id)
    if found is None:
        raise _not_visible(source_id)
    return found


def current_version(ports: PlatformPorts, who: Principal, source_id: str) -> FileVersionInfo:
    """The stored current version of a visible source."""
    chosen = stored_version(ports.files.versions(who.scope, source_id) or [])
    if chosen is None:
        raise _not_visible(source_id)
    return chosen


def _visible(ports: PlatformPorts, who: Principal, source_id: str) -> None:
    if ports.catalog.source_status(who.scope, source_id) is None:
        raise _not_visible(source_id)


def delete(ports: PlatformPorts, who: Principal, source_id: str) -> None:
    """Unsearchable at once; the deletion sweep purges every store shortly after."""
    _visible(ports, who, source_id)
    lifecycle.request_deletion(ports.catalog, ports.indexes(), who.tenant_id, source_id)


def change_subjects(
    ports: PlatformPorts, who: Principal, source_id: str, subjects: Sequence[str]
) -> None:
    """Who may read the source: in both indexes before this returns."""
    _visible(ports, who, source_id)
    lifecycle.change_subjects(ports.catalog, ports.indexes(), who.tenant_id, source_id, subjects)


def change_tags(ports: PlatformPorts, who: Principal, source_id: str, tags: Sequence[str]) -> None:
    """Tags filter searches inside both legs; they reach both indexes before this returns."""
    _visible(ports, who, source_id)
    lifecycle.change_tags(ports.catalog, ports.indexes(), who.tenant_id, source_id, tags)


@dataclass(frozen=True, slots=True)
class Reference:
    """Where a version's bytes can be read, until `expires_at`."""

    url: str
    expires_at: datetime


def reference(
    ports: PlatformPorts,
    who: Principal,
    source_id: str,
    *,
    ttl_seconds: int = int(MAX_LIFETIME.total_seconds()),
    version: int | None = None,
    now: Clock = _now,
) -> Reference:
    """A link to a version's bytes (the current one unless `version` is given),
    valid for at most MAX_LIFETIME (15 minutes) whatever `ttl_seconds` asks."""
    chosen = stored_version(ports.files.versions(who.scope, source_id) or [], version)
    if chosen is None:
        raise NotFound(f"no stored version of source {source_id} is visible to this key")
    lifetime = clamped_lifetime(ttl_seconds)
    issued = now().replace(microsecond=0)  # never later than the URL's own clock
    signed = presigned_read(ports, who.tenant_id, source_id, chosen.version_id, lifetime)
    if signed is not None:  # the store's own URL: it cannot be revoked (file_links)
        return Reference(signed, issued + lifetime)
    token, expires_at = sign(
        ports.reference_secret(), who.tenant_id, source_id, chosen.version_id, lifetime, now()
    )
    return Reference(f"{PROXIED_READ}{token}", expires_at)


@dataclass(frozen=True, slots=True)
class ReferencedBytes:
    filename: str
    media_type: str
    chunks: Iterator[bytes]  # streamed from the store, never held whole


def read_reference(platform: WalledPlatform, token: str, now: Clock = _now) -> ReferencedBytes:
    """The bytes a reference names. The token is its own credential (bound to
    tenant, source and version). Refusals: `expired` (ask for a new one),
    `forged`; not_found when the version was deleted since."""
    checked = verify(platform.reference_secret(), token, now())
    if isinstance(checked, ReferenceRefused):
        if checked.reason == "expired":
            raise Refused("the reference has expired", "ask for a new reference", code="expired")
        raise Refused(
            "the reference is not valid", "ask for a reference to the file", code="forged"
        )
    ports = platform.for_tenant(checked.tenant_id)
    found = ports.catalog.readable_version(checked.tenant_id, checked.source_id, checked.version_id)
    if found is None:  # deleted since the reference was made
        raise NotFound("the file is no longer available")
    blob_key, filename, media_type = found
    return ReferencedBytes(filename, media_type, ports.blobs.read_chunks(blob_key))
