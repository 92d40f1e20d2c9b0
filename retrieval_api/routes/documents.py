"""Document operations that produce new files: PDF merge, split and
watermark, and convert_file. Each writes a new source (never modifying an
original) through the same registration path as uploads."""

import hashlib

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from groundwork.catalog import NeedsApproval
from groundwork.convert import ConversionRefused, convert
from groundwork.errors import InvalidRequest, NotFound
from groundwork.files import stored_version
from groundwork.pdf_compose import merge, split, watermark
from groundwork.pipeline import IncomingFile, register_incoming
from groundwork.ports import Principal
from groundwork.uploads import check_declared
from resources.platform import Platform
from resources.sniffing import sniff_media_type
from retrieval_api.deps import PlatformDep, PrincipalDep
from retrieval_api.errors import error_response
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


def register_new(
    platform: Platform, who: Principal, filename: str, data: bytes
) -> RegistrationOut | JSONResponse:
    refused = check_declared(filename, len(data))
    if refused is not None:
        return error_response(415, refused.reason, refused.message)
    media_type = sniff_media_type(data, filename)
    outcome = register_incoming(
        platform.catalog,
        platform.blobs,
        IncomingFile(
            who.tenant_id, f"api:{filename}", filename, who.subjects, media_type, replace=False
        ),
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        write=lambda key: platform.blobs.put(key, data),
    )
    if isinstance(outcome, NeedsApproval):
        return error_response(
            409,
            "approval-required",
            f"{filename} already exists as source {outcome.source_id}; choose another filename "
            "(operations never replace an existing file)",
            source_id=outcome.source_id,
        )
    return RegistrationOut(
        source_id=outcome.source_id,
        version_id=outcome.version_id,
        created=outcome.created,
        media_type=media_type,
    )


def _pdf(platform: Platform, who: Principal, ref: FileRef) -> bytes:
    data, media_type, filename = load_input(platform, who, ref)
    if media_type != "application/pdf":
        raise InvalidRequest(
            f"{filename} is {media_type}, not a PDF; convert it first (/v1/convert)"
        )
    return data


def _one(
    result: RegistrationOut | JSONResponse, unrenderable: tuple[str, ...] = ()
) -> NewFilesOut | JSONResponse:
    if isinstance(result, JSONResponse):
        return result
    return NewFilesOut(files=[result], unrenderable=list(unrenderable))


@router.post("/v1/pdf/merge", response_model=NewFilesOut, status_code=201)
def merge_pdfs(
    body: MergeRequest, who: PrincipalDep, platform: PlatformDep
) -> NewFilesOut | JSONResponse:
    merged = merge([_pdf(platform, who, ref) for ref in body.inputs])
    return _one(register_new(platform, who, body.filename, merged))


@router.post("/v1/pdf/split", response_model=NewFilesOut, status_code=201)
def split_pdf(
    body: SplitRequest, who: PrincipalDep, platform: PlatformDep
) -> NewFilesOut | JSONResponse:
    parts = split(_pdf(platform, who, body.input), body.ranges)
    files = []
    for n, part in enumerate(parts, start=1):
        result = register_new(platform, who, f"{body.filename_prefix}-part{n}.pdf", part)
        if isinstance(result, JSONResponse):
            return result
        files.append(result)
    return NewFilesOut(files=files)


@router.post("/v1/pdf/watermark", response_model=NewFilesOut, status_code=201)
def watermark_pdf(
    body: WatermarkRequest, who: PrincipalDep, platform: PlatformDep
) -> NewFilesOut | JSONResponse:
    return _one(
        register_new(
            platform, who, body.filename, watermark(_pdf(platform, who, body.input), body.text)
        )
    )


@router.post("/v1/convert", response_model=NewFilesOut, status_code=201)
def convert_file(
    body: ConvertRequest, who: PrincipalDep, platform: PlatformDep
) -> NewFilesOut | JSONResponse:
    data, media_type, filename = load_input(platform, who, body.input)
    result = convert(data, media_type, filename, body.target)
    if isinstance(result, ConversionRefused):
        return error_response(415, "unsupported-conversion", result.message)
    stem = filename.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    target_name = body.filename or f"{stem}{result.extension}"
    return _one(register_new(platform, who, target_name, result.data), result.unrenderable)
