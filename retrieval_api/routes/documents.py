"""Document operations that produce new files: PDF merge, split, watermark,
page reorder, insert and rotate, and convert_file. Each maps to one call of
groundwork.services.documents, which writes a new source (never modifying an
original) through the same registration path as uploads."""

from fastapi import APIRouter

from groundwork.services import documents
from groundwork.services.documents import InputFile
from groundwork.services.registration import Registered
from retrieval_api.artifact_schemas import (
    ConvertRequest,
    FileRef,
    MergeRequest,
    NewFilesOut,
    SplitRequest,
    WatermarkRequest,
)
from retrieval_api.deps import PlatformDep, PrincipalDep
from retrieval_api.page_schemas import InsertRequest, ReorderRequest, RotateRequest
from retrieval_api.schemas import RegistrationOut

router = APIRouter()


def _input(ref: FileRef) -> InputFile:
    return InputFile(ref.source_id, ref.artifact_file_id)


def _registration_out(registered: Registered) -> RegistrationOut:
    return RegistrationOut.model_validate(registered, from_attributes=True)


def _one(registered: Registered, unrenderable: tuple[str, ...] = ()) -> NewFilesOut:
    return NewFilesOut(files=[_registration_out(registered)], unrenderable=list(unrenderable))


@router.post("/v1/pdf/merge", response_model=NewFilesOut, status_code=201)
def merge_pdfs(body: MergeRequest, who: PrincipalDep, platform: PlatformDep) -> NewFilesOut:
    return _one(
        documents.merge_pdfs(platform, who, [_input(ref) for ref in body.inputs], body.filename)
    )


@router.post("/v1/pdf/split", response_model=NewFilesOut, status_code=201)
def split_pdf(body: SplitRequest, who: PrincipalDep, platform: PlatformDep) -> NewFilesOut:
    parts = documents.split_pdf(
        platform, who, _input(body.input), body.ranges, body.filename_prefix
    )
    return NewFilesOut(files=[_registration_out(p) for p in parts])


@router.post("/v1/pdf/watermark", response_model=NewFilesOut, status_code=201)
def watermark_pdf(body: WatermarkRequest, who: PrincipalDep, platform: PlatformDep) -> NewFilesOut:
    return _one(
        documents.watermark_pdf(platform, who, _input(body.input), body.text, body.filename)
    )


@router.post("/v1/pdf/reorder", response_model=NewFilesOut, status_code=201)
def reorder_pages(body: ReorderRequest, who: PrincipalDep, platform: PlatformDep) -> NewFilesOut:
    return _one(
        documents.reorder_pages(platform, who, _input(body.input), body.order, body.filename)
    )


@router.post("/v1/pdf/insert", response_model=NewFilesOut, status_code=201)
def insert_pdf(body: InsertRequest, who: PrincipalDep, platform: PlatformDep) -> NewFilesOut:
    return _one(
        documents.insert_pdf(
            platform, who, _input(body.input), _input(body.insert), body.after, body.filename
        )
    )


@router.post("/v1/pdf/rotate", response_model=NewFilesOut, status_code=201)
def rotate_pages(body: RotateRequest, who: PrincipalDep, platform: PlatformDep) -> NewFilesOut:
    return _one(
        documents.rotate_pages(
            platform, who, _input(body.input), body.pages, body.degrees, body.filename
        )
    )


@router.post("/v1/convert", response_model=NewFilesOut, status_code=201)
def convert_file(body: ConvertRequest, who: PrincipalDep, platform: PlatformDep) -> NewFilesOut:
    converted = documents.convert_file(
        platform, who, _input(body.input), body.target, body.filename
    )
    return _one(converted.registered, converted.unrenderable)
