"""Artifacts over HTTP: create, revise (compare-and-set on the generation),
history, restore, export a version, files by id, delete (as a document). Each
route maps to one call of groundwork.services.artifacts, where access, the
approval rule and the export live; `source` files are never served."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from groundwork.artifact_edits import edit_from_dict
from groundwork.artifact_indexing import Indexing
from groundwork.artifacts import ArtifactFile, Provenance, Saved, provenance_from
from groundwork.services import artifacts as artifact_service
from groundwork.services.artifacts import ArtifactView, Export, ReadableFile
from retrieval_api.artifact_schemas import (
    ApprovalBody,
    ApprovalOut,
    ArtifactCreate,
    ArtifactFileOut,
    ArtifactListOut,
    ArtifactOut,
    ArtifactRestore,
    ArtifactRevise,
    ArtifactVersionOut,
    ExportOut,
    ExportRequest,
    IndexingOut,
    ProvenanceIn,
    SavedOut,
)
from retrieval_api.deps import PlatformDep, PrincipalDep
from retrieval_api.errors import error_response
from retrieval_api.schemas import LifecycleOut

router = APIRouter()


def _provenance(body: ProvenanceIn) -> Provenance:
    return provenance_from(body.tool, body.run, body.inputs, body.derived_from)


def _file_out(f: ArtifactFile) -> ArtifactFileOut:
    return ArtifactFileOut(
        file_id=f.file_id,
        role=f.role,
        format=f.format,
        media_type=f.media_type,
        sha256=f.sha256,
        size_bytes=f.size_bytes,
        url=f"/v1/artifact-files/{f.file_id}",
    )


def artifact_out(view: ArtifactView, with_markdown: bool) -> ArtifactOut:
    record = view.record
    return ArtifactOut(
        artifact_id=record.artifact_id,
        source_id=record.source_id,
        title=view.title,
        path=record.filename,
        generation=record.generation,
        indexing_state=record.processing_state,
        stale=bool(view.stale_reasons),
        stale_reasons=list(view.stale_reasons),
        untrusted_markdown=view.markdown if with_markdown else None,
        files=[_file_out(f) for f in view.files],
        indexing=_indexing_out(view.indexing),
    )


def _indexing_out(indexing: Indexing) -> IndexingOut:
    return IndexingOut(state=indexing.state, reason=indexing.reason)


def _saved_out(saved: Saved) -> SavedOut:
    out = SavedOut.model_validate(saved, from_attributes=True)
    out.indexing = _indexing_out(saved.indexing) if saved.indexing else None
    return out


def _export_out(exported: Export) -> ExportOut:
    return ExportOut(
        export_id=exported.export_id,
        artifact_id=exported.artifact_id,
        generation=exported.generation,
        format=exported.format,
        state=exported.state,
        failure_reason=exported.failure_reason,
        unrenderable=list(exported.unrenderable),
        receipt=exported.receipt,
        file=_file_out(exported.file) if exported.file else None,
    )


@router.post("/v1/artifacts", response_model=ArtifactOut, status_code=201)
def create(body: ArtifactCreate, who: PrincipalDep, platform: PlatformDep) -> ArtifactOut:
    made = artifact_service.create(
        platform,
        who,
        path=body.path,
        markdown=body.markdown,
        provenance=_provenance(body.provenance),
        subjects=body.subjects,
        fmt=body.format,
    )
    return artifact_out(made, with_markdown=True)


@router.get("/v1/artifacts", response_model=ArtifactListOut)
def list_artifacts(
    who: PrincipalDep,
    platform: PlatformDep,
    cursor: Annotated[str | None, Query(max_length=100)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> ArtifactListOut:
    views, after = artifact_service.list_artifacts(platform, who, cursor, limit)
    return ArtifactListOut(
        artifacts=[artifact_out(v, with_markdown=False) for v in views], next_cursor=after
    )


@router.get("/v1/artifacts/{artifact_id}", response_model=ArtifactOut)
def manifest(artifact_id: str, who: PrincipalDep, platform: PlatformDep) -> ArtifactOut:
    """Files by role with content URLs; title and Markdown read from the document."""
    return artifact_out(artifact_service.describe(platform, who, artifact_id), with_markdown=True)


@router.post("/v1/artifacts/{artifact_id}/revise", response_model=SavedOut)
def revise(
    artifact_id: str, body: ArtifactRevise, who: PrincipalDep, platform: PlatformDep
) -> SavedOut | JSONResponse:
    try:
        edits = [edit_from_dict(e) for e in body.edits]
    except (TypeError, ValueError) as exc:
        return error_response(422, "invalid", f"an edit is malformed: {exc}")
    return _saved_out(
        artifact_service.revise(
            platform,
            who,
            artifact_id,
            expected_generation=body.expected_generation,
            provenance=_provenance(body.provenance),
            markdown=body.markdown,
            edits=edits,
            approval_token=body.approval_token,
        )
    )


@router.post("/v1/artifacts/{artifact_id}/approve", response_model=ApprovalOut)
def approve(
    artifact_id: str, body: ApprovalBody, who: PrincipalDep, platform: PlatformDep
) -> ApprovalOut:
    """Approve a destructive proposal (needs artifacts:approve): returns the
    approval_token to resubmit the same edits with."""
    approved = artifact_service.approve(platform, who, artifact_id, body.proposal_token)
    return ApprovalOut(
        approval_token=approved.approval_token,
        artifact_id=approved.artifact_id,
        generation=approved.generation,
        expires_at=approved.expires_at,
    )


@router.post("/v1/artifacts/{artifact_id}/index", response_model=IndexingOut)
def index(artifact_id: str, who: PrincipalDep, platform: PlatformDep) -> IndexingOut:
    """Retry the current version's indexing (a save answered `failed` or
    `pending`); an indexed artifact answers at once."""
    return _indexing_out(artifact_service.index(platform, who, artifact_id))


@router.get("/v1/artifacts/{artifact_id}/history", response_model=list[ArtifactVersionOut])
def history(artifact_id: str, who: PrincipalDep, platform: PlatformDep) -> list[ArtifactVersionOut]:
    return [
        ArtifactVersionOut(
            generation=v.generation,
            source_version_id=v.source_version_id,
            provenance=v.provenance,
            restored_from=v.restored_from,
            summary=list(v.summary),
            created_at=v.created_at.isoformat(),
        )
        for v in artifact_service.history(platform, who, artifact_id)
    ]


@router.post("/v1/artifacts/{artifact_id}/restore", response_model=SavedOut)
def restore(
    artifact_id: str, body: ArtifactRestore, who: PrincipalDep, platform: PlatformDep
) -> SavedOut:
    return _saved_out(
        artifact_service.restore(
            platform,
            who,
            artifact_id,
            expected_generation=body.expected_generation,
            generation=body.generation,
            run=body.run,
        )
    )


@router.post("/v1/artifacts/{artifact_id}/exports", response_model=ExportOut)
def export(
    artifact_id: str, body: ExportRequest, who: PrincipalDep, platform: PlatformDep
) -> ExportOut:
    """Export a specific version. One record per (version, format): a second
    request, even a concurrent one, gets the same file."""
    return _export_out(
        artifact_service.export(platform, who, artifact_id, body.generation, body.format)
    )


def _content(found: ReadableFile, request: Request | None) -> Response:
    """`request` only for a version-addressed file: its checksum ETag may answer 304."""
    headers = found.headers(version_addressed=request is not None)
    if request is not None and request.headers.get("if-none-match") == headers["ETag"]:
        return Response(status_code=304, headers=headers)
    return Response(content=found.read(), media_type=found.file.media_type, headers=headers)


@router.get("/v1/artifacts/{artifact_id}/download", response_model=None)
def download_current(
    artifact_id: str,
    who: PrincipalDep,
    platform: PlatformDep,
    format: Annotated[
        str | None,
        Query(max_length=40, description="a registered format; default the artifact's own"),
    ] = None,
) -> Response:
    """The current version: its primary file, or in `format` (exported once, then reused)."""
    return _content(artifact_service.download(platform, who, artifact_id, format), None)


@router.get("/v1/artifact-files/{file_id}", response_model=None)
def read_file(file_id: str, request: Request, who: PrincipalDep, platform: PlatformDep) -> Response:
    """Immutable content by id; the checksum is the ETag. `source` files are not served."""
    return _content(artifact_service.read_file(platform, who, file_id), request)


@router.delete("/v1/artifacts/{artifact_id}", response_model=LifecycleOut)
def delete(artifact_id: str, who: PrincipalDep, platform: PlatformDep) -> LifecycleOut:
    """Executes as a deletion of the artifact's document."""
    record = artifact_service.delete(platform, who, artifact_id)
    return LifecycleOut(
        source_id=record.source_id,
        state="deleting",
        message="The artifact's document is no longer searchable; its data is being purged.",
    )
