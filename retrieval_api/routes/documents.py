"""Document operations that produce new files: PDF merge, split and
watermark, and convert_file. Each writes a new source (never modifying an
original) through the same registration path as uploads."""

from fastapi import APIRouter

from groundwork.convert import ConversionRefused, convert
from groundwork.errors import InvalidRequest, NotFound, Refused
from groundwork.files import stored_version
from groundwork.pdf_compose import merge, split, watermark
from groundwork.ports import Principal
from groundwork.services.registration import register_bytes
from resources.composition.platform import Platform
from retrieval_api.deps import PlatformDep, PrincipalDep
from retrieval_api.schemas import (
    ConvertRequest,
    FileRef,
    MergeRequest,
    NewFilesOut,
    RegistrationOut,
    SplitRequest,
    WatermarkRequest,
)

router = APIRouter()
MAX_INPUT_BYTES = 100 * 1024 * 1024


def load_input(platform: Platform, who: Principal, ref: FileRef) -> tuple[bytes, str, str]:
    """(bytes, media type, filename) of a visible source's current version or an
    artifact's readable file; not_found for anything hidden."""
    if (ref.source_id is None) == (ref.artifact_file_id is None):
        raise InvalidRequest("name exactly one of source_id or artifact_file_id")
    if ref.source_id is not None:
        current = stored_version(platform.files.versions(who.scope, ref.source_id) or [])
        if current is None:
            raise NotFound(f"no source {ref.source_id} is visible to this key")
        if current.size_bytes > MAX_INPUT_BYTES:
            raise InvalidRequest(f"inputs are limited to {MAX_INPUT_BYTES} bytes")
        found = platform.catalog.readable_version(who.tenant_id, ref.source_id, current.version_id)
        if found is None:
            raise NotFound(f"no source {ref.source_id} is visible to this key")
        blob_key, filename, media_type = found
        return platform.blobs.get(blob_key), media_type, filename
    file = platform.artifacts.file(who.scope, str(ref.artifact_file_id))
    if file is None or file.role == "source":
        raise NotFound(f"no file {ref.artifact_file_id} is visible to this key")
    return platform.blobs.get(file.blob_key), file.media_type, f"{file.artifact_id}.{file.format}"


def register_new(platform: Platform, who: Principal, filename: str, data: bytes) -> RegistrationOut:
    """A made file goes through the registration policy like any upload; it never
    replaces an existing file (approval-required names the clash)."""
    registered = register_bytes(platform, who, filename, data, limit=MAX_INPUT_BYTES)
    return RegistrationOut(
        source_id=registered.source_id,
        version_id=registered.version_id,
        created=registered.created,
        media_type=registered.media_type,
    )


def _pdf(platform: Platform, who: Principal, ref: FileRef) -> bytes:
    data, media_type, filename = load_input(platform, who, ref)
    if media_type != "application/pdf":
        raise InvalidRequest(
            f"{filename} is {media_type}, not a PDF; convert it first (/v1/convert)"
        )
    return data


def _one(result: RegistrationOut, unrenderable: tuple[str, ...] = ()) -> NewFilesOut:
    return NewFilesOut(files=[result], unrenderable=list(unrenderable))


@router.post("/v1/pdf/merge", response_model=NewFilesOut, status_code=201)
def merge_pdfs(body: MergeRequest, who: PrincipalDep, platform: PlatformDep) -> NewFilesOut:
    merged = merge([_pdf(platform, who, ref) for ref in body.inputs])
    return _one(register_new(platform, who, body.filename, merged))


@router.post("/v1/pdf/split", response_model=NewFilesOut, status_code=201)
def split_pdf(body: SplitRequest, who: PrincipalDep, platform: PlatformDep) -> NewFilesOut:
    parts = split(_pdf(platform, who, body.input), body.ranges)
    files = []
    for n, part in enumerate(parts, start=1):
        files.append(register_new(platform, who, f"{body.filename_prefix}-part{n}.pdf", part))
    return NewFilesOut(files=files)


@router.post("/v1/pdf/watermark", response_model=NewFilesOut, status_code=201)
def watermark_pdf(body: WatermarkRequest, who: PrincipalDep, platform: PlatformDep) -> NewFilesOut:
    return _one(
        register_new(
            platform, who, body.filename, watermark(_pdf(platform, who, body.input), body.text)
        )
    )


@router.post("/v1/convert", response_model=NewFilesOut, status_code=201)
def convert_file(body: ConvertRequest, who: PrincipalDep, platform: PlatformDep) -> NewFilesOut:
    data, media_type, filename = load_input(platform, who, body.input)
    result = convert(data, media_type, filename, body.target)
    if isinstance(result, ConversionRefused):
        raise Refused(
            result.message, "pick a supported target for this file's type", code="unsupported"
        )
    stem = filename.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    target_name = body.filename or f"{stem}{result.extension}"
    return _one(register_new(platform, who, target_name, result.data), result.unrenderable)
