"""Request and response bodies of the artifact and document-composition routes
(retrieval_api.routes.artifacts, retrieval_api.routes.documents)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from retrieval_api.schemas import RegistrationOut


class ProvenanceIn(BaseModel):
    """Required on every artifact version."""

    tool: str = Field(min_length=1, max_length=200)
    inputs: dict[str, object] | Annotated[str, Field(max_length=20000)] = Field(
        default_factory=dict,
        description="the request and parameters, as an object or as text (stored as {text})",
    )
    run: str = Field(min_length=1, max_length=200)
    derived_from: list[dict[str, str]] = Field(
        default_factory=list,
        max_length=500,
        description="{chunk_id, content_hash} / {source_id, version_id}, or the tool "
        "schema's {ref_type, id, version}",
    )


class ArtifactCreate(BaseModel):
    path: str = Field(
        min_length=4, max_length=255, description="a Markdown file name, e.g. reports/q3.md"
    )
    markdown: str = Field(max_length=200_000)
    subjects: list[str] | None = Field(default=None, max_length=50)
    provenance: ProvenanceIn
    format: str = Field(
        default="markdown",
        min_length=1,
        max_length=40,
        description="the primary file's format: any registered renderer's (markdown, pdf, "
        "docx, pptx, xlsx, html); an unknown one is refused naming the known formats",
    )


class ArtifactRevise(BaseModel):
    expected_generation: int = Field(ge=1)
    markdown: str | None = Field(default=None, max_length=200_000)
    edits: list[dict[str, object]] = Field(default_factory=list, max_length=100)
    approval_token: str | None = Field(default=None, max_length=1000)
    provenance: ProvenanceIn


class ArtifactRestore(BaseModel):
    expected_generation: int = Field(ge=1)
    generation: int = Field(ge=1)
    run: str = Field(default="api", max_length=200)


class ArtifactFileOut(BaseModel):
    file_id: str
    role: str
    format: str
    media_type: str
    sha256: str
    size_bytes: int
    url: str


class IndexingOut(BaseModel):
    """How far a saved version's indexing got: `indexed` (searchable and
    citable now), `pending` (the ingest pipeline, or a retry, finishes it) or
    `failed`; `reason` says why it is not indexed."""

    state: Literal["indexed", "pending", "failed"]
    reason: str | None = None


class ArtifactOut(BaseModel):
    artifact_id: str
    source_id: str
    title: str
    path: str
    generation: int
    indexing_state: str | None
    stale: bool
    stale_reasons: list[str]
    untrusted_markdown: str | None = None  # the artifact's text: a document like any other
    files: list[ArtifactFileOut] = Field(default_factory=list)
    indexing: IndexingOut | None = None


class ArtifactListOut(BaseModel):
    artifacts: list[ArtifactOut]
    next_cursor: str | None


class ArtifactVersionOut(BaseModel):
    generation: int
    source_version_id: str
    provenance: dict[str, object]
    restored_from: int | None
    summary: list[str]
    created_at: str


class SavedOut(BaseModel):
    artifact_id: str
    source_id: str
    generation: int
    changed: bool
    summary: list[str]
    indexing: IndexingOut | None = None


class ExportRequest(BaseModel):
    generation: int = Field(ge=1)
    format: str = Field(
        min_length=1,
        max_length=40,
        description="a registered renderer's format; an unknown one is refused naming them",
    )


class ExportOut(BaseModel):
    export_id: str
    artifact_id: str
    generation: int
    format: str
    state: Literal["pending", "rendered", "failed"]
    failure_reason: str | None
    unrenderable: list[str]
    receipt: dict[str, object] | None
    file: ArtifactFileOut | None


class FileRef(BaseModel):
    source_id: str | None = Field(default=None, max_length=100)
    artifact_file_id: str | None = Field(default=None, max_length=100)


class MergeRequest(BaseModel):
    inputs: list[FileRef] = Field(min_length=2, max_length=50)
    filename: str = Field(min_length=5, max_length=255)


class SplitRequest(BaseModel):
    input: FileRef
    ranges: str = Field(min_length=1, max_length=500, description="e.g. 1-3,5")
    filename_prefix: str = Field(min_length=1, max_length=200)


class WatermarkRequest(BaseModel):
    input: FileRef
    text: str = Field(min_length=1, max_length=200)
    filename: str = Field(min_length=5, max_length=255)


class ConvertRequest(BaseModel):
    input: FileRef
    target: Literal["pdf", "docx", "html", "markdown", "csv", "xlsx"]
    filename: str | None = Field(default=None, max_length=255)


class NewFilesOut(BaseModel):
    files: list[RegistrationOut]
    unrenderable: list[str] = Field(default_factory=list)


class ApprovalBody(BaseModel):
    proposal_token: str = Field(min_length=1, max_length=1000)


class ApprovalOut(BaseModel):
    approval_token: str
    artifact_id: str
    generation: int
    expires_at: datetime
