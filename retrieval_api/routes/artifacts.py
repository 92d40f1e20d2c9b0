"""Artifacts over HTTP: create, revise (compare-and-set on the generation),
history, restore, export a version, files by id, delete (as a document).
Access follows the owning document's tenant and permission scope; anything
hidden answers the same not_found as a missing id. `source` files are never
served on any route."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from groundwork.artifact_edits import edit_from_dict
from groundwork.artifact_exports import export_version
from groundwork.artifact_staleness import stale_reasons
from groundwork.artifacts import (
    USER_READABLE_ROLES,
    ArtifactFile,
    ArtifactRecord,
    Provenance,
    StaleGenerationError,
    create_artifact,
    provenance_from,
    restore_artifact,
)
from groundwork.documents import ExtractedDocument
from groundwork.errors import NotFound
from groundwork.lifecycle import request_deletion
from groundwork.ports import Principal
from groundwork.render import ExportFormat
from groundwork.services import artifacts as artifact_service
from groundwork.services.registration import sharing_subjects
from resources.composition.platform import Platform
from retrieval_api.deps import PlatformDep, PrincipalDep
from retrieval_api.errors import error_response
from retrieval_api.schemas import (
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
    LifecycleOut,
    ProvenanceIn,
    SavedOut,
)

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


def artifact_out(
    platform: Platform, who: Principal, record: ArtifactRecord, with_markdown: bool
) -> ArtifactOut:
    store = platform.artifacts
    versions = store.versions(who.scope, record.artifact_id)
    current = next(v for v in versions if v.generation == record.generation)
    markdown = platform.blobs.get(current.blob_key).decode()
    found = platform.catalog.current_extraction(who.scope, record.source_id)
    title = (
        found[1].title
        if found and isinstance(found[1], ExtractedDocument)
        else next(
            (line.lstrip("# ").strip() for line in markdown.splitlines() if line.startswith("#")),
            record.filename,
        )
    )
    reasons = stale_reasons(store, record.tenant_id, current.provenance.get("derived_from", []))
    files = [
        _file_out(f)
        for f in store.files(who.scope, record.artifact_id, record.generation)
        if f.role in USER_READABLE_ROLES
    ]
    return ArtifactOut(
        artifact_id=record.artifact_id,
        source_id=record.source_id,
        title=title,
        path=record.filename,
        generation=record.generation,
        indexing_state=record.processing_state,
        stale=bool(reasons),
        stale_reasons=reasons,
        untrusted_markdown=markdown if with_markdown else None,
        files=files,
    )


def _record(platform: Platform, who: Principal, artifact_id: str) -> ArtifactRecord:
    record = platform.artifacts.get(who.scope, artifact_id)
    if record is None:
        raise NotFound(f"no artifact {artifact_id} is visible to this key")
    return record


def _stale(exc: StaleGenerationError) -> JSONResponse:
    return error_response(
        409,
        "stale_generation",
        str(exc),
        alternative=f"reload the artifact (generation {exc.current}) and apply the change again",
        current_generation=exc.current,
    )


@router.post("/v1/artifacts", response_model=ArtifactOut, status_code=201)
def create(
    body: ArtifactCreate, who: PrincipalDep, platform: PlatformDep
) -> ArtifactOut | JSONResponse:
    subjects = sharing_subjects(who, body.subjects)
    saved = create_artifact(
        platform.catalog,
        platform.blobs,
        platform.artifacts,
        tenant_id=who.tenant_id,
        subjects=subjects,
        path=body.path,
        markdown=body.markdown,
        provenance=_provenance(body.provenance),
    )
    return artifact_out(
        platform, who, _record(platform, who, saved.artifact_id), with_markdown=True
    )


@router.get("/v1/artifacts", response_model=ArtifactListOut)
def list_artifacts(
    who: PrincipalDep,
    platform: PlatformDep,
    cursor: Annotated[str | None, Query(max_length=100)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> ArtifactListOut:
    records, after = platform.artifacts.list_artifacts(who.scope, cursor, limit)
    return ArtifactListOut(
        artifacts=[artifact_out(platform, who, r, with_markdown=False) for r in records],
        next_cursor=after,
    )


@router.get("/v1/artifacts/{artifact_id}", response_model=ArtifactOut)
def manifest(artifact_id: str, who: PrincipalDep, platform: PlatformDep) -> ArtifactOut:
    """Files by role with content URLs; title and Markdown read from the document."""
    return artifact_out(platform, who, _record(platform, who, artifact_id), with_markdown=True)


@router.post("/v1/artifacts/{artifact_id}/revise", response_model=SavedOut)
def revise(
    artifact_id: str, body: ArtifactRevise, who: PrincipalDep, platform: PlatformDep
) -> SavedOut | JSONResponse:
    try:
        edits = [edit_from_dict(e) for e in body.edits]
    except (TypeError, ValueError) as exc:
        return error_response(422, "invalid", f"an edit is malformed: {exc}")
    outcome = artifact_service.revise(
        platform,
        who,
        artifact_id,
        expected_generation=body.expected_generation,
        provenance=_provenance(body.provenance),
        markdown=body.markdown,
        edits=edits,
        approval_token=body.approval_token,
    )
    return SavedOut(
        artifact_id=outcome.artifact_id,
        source_id=outcome.source_id,
        generation=outcome.generation,
        changed=outcome.changed,
        summary=list(outcome.summary),
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


@router.get("/v1/artifacts/{artifact_id}/history", response_model=list[ArtifactVersionOut])
def history(artifact_id: str, who: PrincipalDep, platform: PlatformDep) -> list[ArtifactVersionOut]:
    _record(platform, who, artifact_id)
    return [
        ArtifactVersionOut(
            generation=v.generation,
            source_version_id=v.source_version_id,
            provenance=v.provenance,
            restored_from=v.restored_from,
            summary=list(v.summary),
            created_at=v.created_at.isoformat(),
        )
        for v in platform.artifacts.versions(who.scope, artifact_id)
    ]


@router.post("/v1/artifacts/{artifact_id}/restore", response_model=SavedOut)
def restore(
    artifact_id: str, body: ArtifactRestore, who: PrincipalDep, platform: PlatformDep
) -> SavedOut | JSONResponse:
    try:
        saved = restore_artifact(
            platform.catalog,
            platform.blobs,
            platform.artifacts,
            who.scope,
            artifact_id,
            expected_generation=body.expected_generation,
            generation=body.generation,
            run=body.run,
        )
    except StaleGenerationError as exc:
        return _stale(exc)
    return SavedOut(
        artifact_id=saved.artifact_id,
        source_id=saved.source_id,
        generation=saved.generation,
        changed=saved.changed,
        summary=list(saved.summary),
    )


@router.post("/v1/artifacts/{artifact_id}/exports", response_model=ExportOut)
def export(
    artifact_id: str, body: ExportRequest, who: PrincipalDep, platform: PlatformDep
) -> ExportOut | JSONResponse:
    """Export a specific version. One record per (version, format): a second
    request, even a concurrent one, gets the same file."""
    record = _record(platform, who, artifact_id)
    version = next(
        (
            v
            for v in platform.artifacts.versions(who.scope, artifact_id)
            if v.generation == body.generation
        ),
        None,
    )
    if version is None:
        raise NotFound(f"artifact {artifact_id} has no generation {body.generation}")
    row = export_version(
        platform.artifacts,
        platform.blobs,
        who.tenant_id,
        artifact_id,
        version,
        ExportFormat(body.format),
        record.filename,
    )
    file = platform.artifacts.file(who.scope, row["file_id"]) if row["file_id"] else None
    return ExportOut(
        export_id=row["export_id"],
        artifact_id=artifact_id,
        generation=row["generation"],
        format=row["format"],
        state=row["state"],
        failure_reason=row["failure_reason"],
        unrenderable=list(row["unrenderable"]),
        receipt=row["receipt"],
        file=_file_out(file) if file else None,
    )


@router.get("/v1/artifacts/{artifact_id}/download", response_model=None)
def download_current(
    artifact_id: str,
    who: PrincipalDep,
    platform: PlatformDep,
    format: Annotated[ExportFormat, Query()] = ExportFormat.MARKDOWN,
) -> Response | JSONResponse:
    """The current version in a format (exported once, then reused)."""
    record = _record(platform, who, artifact_id)
    exported = export(
        artifact_id, ExportRequest(generation=record.generation, format=format.value), who, platform
    )
    if isinstance(exported, JSONResponse):
        return exported
    if exported.file is None:
        return error_response(500, "render-failed", exported.failure_reason or "render failed")
    return _serve(exported.file.file_id, None, who, platform)


@router.get("/v1/artifact-files/{file_id}", response_model=None)
def read_file(file_id: str, request: Request, who: PrincipalDep, platform: PlatformDep) -> Response:
    """Immutable content by id; the checksum is the ETag. `source` files are not served."""
    return _serve(file_id, request, who, platform)


def _serve(file_id: str, request: Request | None, who: Principal, platform: Platform) -> Response:
    found = platform.artifacts.file(who.scope, file_id)
    if found is None or found.role not in USER_READABLE_ROLES:
        raise NotFound(f"no file {file_id} is visible to this key")
    etag = f'"{found.sha256}"'
    if request is not None and request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers={"ETag": etag})
    return Response(
        content=platform.blobs.get(found.blob_key),
        media_type=found.media_type,
        headers={"ETag": etag, "Cache-Control": "private, max-age=31536000, immutable"},
    )


@router.delete("/v1/artifacts/{artifact_id}", response_model=LifecycleOut)
def delete(artifact_id: str, who: PrincipalDep, platform: PlatformDep) -> LifecycleOut:
    """Executes as a deletion of the artifact's document."""
    record = _record(platform, who, artifact_id)
    request_deletion(platform.catalog, platform.indexes(), who.tenant_id, record.source_id)
    return LifecycleOut(
        source_id=record.source_id,
        state="deleting",
        message="The artifact's document is no longer searchable; its data is being purged.",
    )
