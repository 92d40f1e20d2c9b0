"""Document operations that produce new files: PDF merge, split, watermark,
page reorder, insert and rotate, and conversion. Each reads visible inputs only and writes a new
source (never modifying an original) through the registration policy every
upload passes; a made file never replaces an existing one (approval-required
names the clash)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from groundwork.convert import ConversionRefused, convert
from groundwork.errors import InvalidRequest, NotFound, Refused
from groundwork.pdf_compose import insert_pages, merge, reorder, rotate, split, watermark
from groundwork.ports import Principal
from groundwork.services import sources
from groundwork.services.platform import PlatformPorts
from groundwork.services.registration import Registered, register_bytes

MAX_INPUT_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class InputFile:
    """Names exactly one input: a source's current version or an artifact's readable file."""

    source_id: str | None = None
    artifact_file_id: str | None = None


@dataclass(frozen=True, slots=True)
class Loaded:
    data: bytes
    media_type: str
    filename: str


@dataclass(frozen=True, slots=True)
class Converted:
    registered: Registered
    unrenderable: tuple[str, ...]


def load_input(ports: PlatformPorts, who: Principal, ref: InputFile) -> Loaded:
    """The bytes of a visible source's current version or an artifact's readable
    file; not_found for anything hidden (an artifact's `source` file included)."""
    if (ref.source_id is None) == (ref.artifact_file_id is None):
        raise InvalidRequest("name exactly one of source_id or artifact_file_id")
    if ref.source_id is not None:
        current = sources.current_version(ports, who, ref.source_id)
        if current.size_bytes > MAX_INPUT_BYTES:
            raise InvalidRequest(f"inputs are limited to {MAX_INPUT_BYTES} bytes")
        found = ports.catalog.readable_version(who.tenant_id, ref.source_id, current.version_id)
        if found is None:
            raise NotFound(f"no source {ref.source_id} is visible to this key")
        blob_key, filename, media_type = found
        return Loaded(ports.blobs.get(blob_key), media_type, filename)
    file = ports.artifacts.file(who.scope, str(ref.artifact_file_id))
    if file is None or file.role == "source":
        raise NotFound(f"no file {ref.artifact_file_id} is visible to this key")
    return Loaded(
        ports.blobs.get(file.blob_key), file.media_type, f"{file.artifact_id}.{file.format}"
    )


def _register_new(ports: PlatformPorts, who: Principal, filename: str, data: bytes) -> Registered:
    return register_bytes(ports, who, filename, data, limit=MAX_INPUT_BYTES)


def _pdf(ports: PlatformPorts, who: Principal, ref: InputFile) -> bytes:
    loaded = load_input(ports, who, ref)
    if loaded.media_type != "application/pdf":
        raise InvalidRequest(
            f"{loaded.filename} is {loaded.media_type}, not a PDF; convert it first (/v1/convert)"
        )
    return loaded.data


def merge_pdfs(
    ports: PlatformPorts, who: Principal, inputs: Sequence[InputFile], filename: str
) -> Registered:
    merged = merge([_pdf(ports, who, ref) for ref in inputs])
    return _register_new(ports, who, filename, merged)


def split_pdf(
    ports: PlatformPorts,
    who: Principal,
    ref: InputFile,
    ranges: str,
    filename_prefix: str,
) -> list[Registered]:
    """One new PDF per range of `ranges` (e.g. "1-3,5")."""
    parts = split(_pdf(ports, who, ref), ranges)
    return [
        _register_new(ports, who, f"{filename_prefix}-part{n}.pdf", part)
        for n, part in enumerate(parts, start=1)
    ]


def watermark_pdf(
    ports: PlatformPorts, who: Principal, ref: InputFile, text: str, filename: str
) -> Registered:
    return _register_new(ports, who, filename, watermark(_pdf(ports, who, ref), text))


def reorder_pages(
    ports: PlatformPorts, who: Principal, ref: InputFile, order: Sequence[int], filename: str
) -> Registered:
    return _register_new(ports, who, filename, reorder(_pdf(ports, who, ref), order))


def insert_pdf(
    ports: PlatformPorts,
    who: Principal,
    ref: InputFile,
    inserted: InputFile,
    after: int,
    filename: str,
) -> Registered:
    """`inserted`'s pages after page `after` of `ref` (both visible PDFs)."""
    composed = insert_pages(_pdf(ports, who, ref), _pdf(ports, who, inserted), after)
    return _register_new(ports, who, filename, composed)


def rotate_pages(
    ports: PlatformPorts, who: Principal, ref: InputFile, pages: str, degrees: int, filename: str
) -> Registered:
    return _register_new(ports, who, filename, rotate(_pdf(ports, who, ref), pages, degrees))


def convert_file(
    ports: PlatformPorts, who: Principal, ref: InputFile, target: str, filename: str | None = None
) -> Converted:
    """The input converted to `target`, registered as a new file named
    `filename` (default: the input's stem with the target's extension).
    Refusal: `unsupported` (the message lists the supported targets)."""
    loaded = load_input(ports, who, ref)
    result = convert(loaded.data, loaded.media_type, loaded.filename, target)
    if isinstance(result, ConversionRefused):
        raise Refused(
            result.message, "pick a supported target for this file's type", code="unsupported"
        )
    stem = loaded.filename.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    registered = _register_new(ports, who, filename or f"{stem}{result.extension}", result.data)
    return Converted(registered, tuple(result.unrenderable))
