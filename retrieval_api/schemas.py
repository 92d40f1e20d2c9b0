"""Request and response bodies: the API's contract, published as OpenAPI."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, TypedDict

from pydantic import BaseModel, Field

from groundwork.attachments import FileReferences, bounded_filename, format_size
from groundwork.citations import Citation
from groundwork.files import FileVersionInfo


class Filters(BaseModel):
    source_ids: list[str] | None = Field(default=None, max_length=100)
    media_types: list[str] | None = Field(default=None, max_length=20)
    tags: list[str] | None = Field(default=None, max_length=20)
    date_from: datetime | None = None
    date_to: datetime | None = None
    pinned_source_ids: list[str] | None = Field(default=None, max_length=20)
    document_types: list[Literal["source", "artifact"]] | None = Field(
        default=None,
        min_length=1,
        max_length=2,
        description="only passages of these document types: source (a registered file), "
        "artifact (a generated artifact saved into the corpus); both when left out",
    )


class SearchBody(BaseModel):
    """An empty query or `*` browses: it lists what exists instead of searching."""

    query: str = Field(default="", max_length=2000)
    limit: int = Field(default=10, ge=1, le=100)
    mode: Literal["hybrid", "vector", "keyword"] = "hybrid"
    rerank: bool = True
    filters: Filters | None = None
    cursor: str | None = Field(default=None, max_length=100)
    layer: Literal["raw", "summary", "summary_first", "auto"] = Field(
        default="raw",
        description="raw: the documents' passages; summary: their compiled summary pages "
        "(each hit's `pointers` are the raw chunk ids to drill into); summary_first: "
        "summaries pick the sources, their raw passages answer; auto: raw or summary_first, "
        "as the router reads the query (the answer's `route` says which and why)",
    )


class CitationOut(BaseModel):
    source_id: str
    source_version_id: str
    chunk_id: str
    content_hash: str
    title: str
    location: dict[str, object]
    location_label: str
    heading_path: list[str]
    untrusted_excerpt: str  # the snapshot of the cited text (file text: data)
    retrieved_at: str
    low_confidence: bool
    document_type: Literal["source", "artifact"] = Field(
        default="source", description="artifact: the cited document is a generated artifact"
    )
    artifact_id: str | None = Field(default=None, description="the cited artifact, for one")
    source_location: dict[str, str] = Field(
        default_factory=dict,
        description="where a connector found the cited version: commit, path and branch "
        "(Git), url (web), bucket and key (S3), path (folder); empty for uploads",
    )
    corpus: Literal["tenant", "system"] = Field(
        default="tenant",
        description="system: the cited passage is the shared system corpus's, not the tenant's",
    )


class HitOut(BaseModel):
    citation_id: str
    rank: int
    score: float
    leg_ranks: dict[str, int]
    chunk_id: str
    source_id: str
    title: str
    filename: str
    media_type: str
    heading_path: list[str]
    untrusted_text: str  # the chunk, fenced: file text is data, never instructions
    citation: CitationOut
    layer: Literal["raw", "summary"] = "raw"
    #: a summary hit: the raw chunk ids it points at (GET /v1/chunks/{id})
    pointers: list[str] = Field(default_factory=list)
    summary_kind: Literal["", "extractive", "generative"] = ""
    corpus: Literal["tenant", "system"] = Field(
        default="tenant",
        description="where the passage came from: the tenant's own documents or the shared "
        "system corpus every tenant reads (unless its operator turned that off)",
    )


class RouteOut(BaseModel):
    """The layer a `layer: auto` request was answered from, and the rule that chose it."""

    layer: Literal["raw", "summary_first"]
    reason: str


_ROUTE_DOC = "layer auto: the layer the router chose for this query and why; null otherwise"


class SearchResponse(BaseModel):
    outcome: Literal[
        "found", "nothing_accessible", "nothing_matches", "nothing_close_enough", "browse"
    ]
    message: str
    model: str
    hits: list[HitOut] = Field(default_factory=list)
    browse: BrowseOut | None = None
    turn_id: str = Field(
        default="", description="pass to /v1/chunks as `turn` for the ids handed out here"
    )
    missing_legs: list[str] = Field(
        default_factory=list,
        description="legs whose engine failed (e.g. keyword): the hits come from the others",
    )
    degraded: list[str] = Field(
        default_factory=list,
        description="parts that ran in a lesser form, each a sentence (a configured remote "
        "reranker that did not answer: the hits are ranked by the local one)",
    )
    route: RouteOut | None = Field(default=None, description=_ROUTE_DOC)


class RegistrationOut(BaseModel):
    source_id: str
    version_id: str
    created: bool
    media_type: str


class VersionStatusOut(BaseModel):
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
    warnings: list[str]


class BlockOut(BaseModel):
    index: int
    kind: str
    untrusted_text: str
    level: int | None
    location: dict[str, object]
    location_label: str
    confidence: float | None
    untrusted_table: list[list[str]] | None


class ReadOut(BaseModel):
    """A window of an extracted document. `untrusted_content` is the window as Markdown,
    fenced as untrusted data: it comes from a document, not from the platform."""

    source_id: str
    version_id: str
    outcome: Literal["window", "nothing_to_read"]
    start_block: int | None = None
    next_block: int | None = None
    total_blocks: int | None = None
    low_confidence: bool = False
    oversized_table: bool = False
    warnings: list[str] = Field(default_factory=list)
    blocks: list[BlockOut] = Field(default_factory=list)
    untrusted_content: str = ""
    reason: str | None = None
    guidance: str | None = None
    retry_may_help: bool | None = None


class ErrorOut(BaseModel):
    error: str
    message: str


class TableOut(BaseModel):
    index: int  # 0-based, as `start_table` pages the tool
    number: int  # 1-based, as citations name it ("table 2 · rows 41–60")
    untrusted_rows: list[list[str]]
    row_numbers: list[int]  # per row: 0 for a header row, else the data row's number
    header_rows: int
    location: dict[str, object]
    location_label: str
    heading_path: list[str]


class TablesOut(BaseModel):
    source_id: str
    version_id: str
    tables: list[TableOut]
    reason: str | None = None


class SourceListing(BaseModel):
    source_id: str
    title: str
    filename: str
    media_type: str
    processing_state: str
    low_confidence: bool


class BrowseOut(BaseModel):
    counts_by_type: dict[str, int]
    sources: list[SourceListing]
    next_cursor: str | None


class ContextBody(BaseModel):
    query: str = Field(min_length=1, max_length=2000)
    budget_tokens: int = Field(default=2000, ge=100, le=16000)
    per_source_cap: int = Field(default=3, ge=1, le=20)
    expand_sections: bool = True
    mode: Literal["hybrid", "vector", "keyword"] = "hybrid"
    rerank: bool = True
    filters: Filters | None = None
    layer: Literal["raw", "summary", "summary_first", "auto"] = "raw"


class ContextItemOut(BaseModel):
    marker: int
    citation_id: str
    chunk_ids: list[str]
    expanded: bool
    tokens: int
    citation: CitationOut


class FileReferenceOut(BaseModel):
    """A file by reference: what to call it by, never what it holds."""

    file_id: str
    filename: str  # bounded (groundwork.attachments.MAX_FILENAME_CHARS), one line
    media_type: str
    size: str  # rounded, fixed width: "1.0 KB", "100 MB"
    size_bytes: int


class FilesFields(TypedDict):
    files: list[FileReferenceOut]
    more_files: bool
    untrusted_files: str


def file_references_out(listed: FileReferences) -> FilesFields:
    """The three fields a context or summaries answer lists files with."""
    return {
        "files": [
            FileReferenceOut(
                file_id=f.file_id,
                filename=bounded_filename(f.filename),
                media_type=f.media_type,
                size=format_size(f.size_bytes),
                size_bytes=f.size_bytes,
            )
            for f in listed.files
        ],
        "more_files": listed.more,
        "untrusted_files": listed.render(),
    }


_FILES_DOC = (
    "the caller's newest files by reference (at most 20, a constant cost per file, "
    "no content); `more_files` says list_files / GET /v1/files has the rest"
)


class ContextOut(BaseModel):
    """`untrusted_context` is ready for a model: every passage is fenced as untrusted
    document data and numbered [n] to match `items[n-1]`."""

    outcome: Literal["found", "nothing_accessible", "nothing_matches", "nothing_close_enough"]
    message: str
    untrusted_context: str
    items: list[ContextItemOut]
    used_tokens: int
    budget_tokens: int
    skipped_for_budget: int
    skipped_for_source_cap: int
    skipped_as_duplicate: int
    files: list[FileReferenceOut] = Field(default_factory=list, description=_FILES_DOC)
    more_files: bool = False
    untrusted_files: str = Field(default="", description="`files` as the lines a model reads")
    route: RouteOut | None = Field(default=None, description=_ROUTE_DOC)


class ChunkOut(BaseModel):
    chunk_id: str
    source_id: str
    version_id: str
    title: str
    heading_path: list[str]
    location: dict[str, object]
    location_label: str
    low_confidence: bool
    untrusted_content: str  # fenced as untrusted document data
    parent_id: str = Field(default="", description="its section; empty for a summary page's")


class CitationCheckOut(BaseModel):
    citation_id: str
    status: Literal["exists", "drifted", "withheld", "removed"]
    citation: CitationOut | None  # absent when withheld


class CitationsResolveBody(BaseModel):
    citation_ids: list[str] = Field(min_length=1, max_length=100)


class CitationsResolveOut(BaseModel):
    citations: list[CitationCheckOut]
    withheld: int
    unknown: list[str]


class SummaryOut(BaseModel):
    source_id: str
    title: str
    media_type: str
    untrusted_summary: str  # fenced: built from file text
    kind: Literal["extractive", "generative"]
    pointers: list[str]
    #: compiled at ingest for this source version (False: summarized at query time)
    compiled: bool = False
    version_id: str = ""
    model: str = ""  # the generative model that wrote it
    stale: bool = False  # the drift check marked it for recompilation


class OverviewStatementOut(BaseModel):
    marker: int = Field(description="the statement's [n] in `untrusted_text`")
    source_id: str
    version_id: str = Field(description="the source version the statement was compiled from")
    title: str
    untrusted_text: str  # fenced: built from file text
    chunk_ids: list[str] = Field(description="drill-down ids for GET /v1/chunks (with `turn`)")


class OverviewPageOut(BaseModel):
    """The compiled overview page: the page to load first, bounded by the serving model's
    tokenizer; each statement cites the source version it was compiled from."""

    untrusted_text: str  # fenced: titles, summaries and headings are file text
    statements: list[OverviewStatementOut]
    tokens: int = Field(description="at most this many tokens by `tokenizer`")
    tokenizer: str
    compiled_at: str
    stale: bool = Field(description="the drift check marked it for recompilation")
    sources_visible: int = Field(description="sources this key can see, listed or not")


class SummariesOut(BaseModel):
    """Summaries first; fetch raw chunks with GET /v1/chunks/{id} using ids copied verbatim from `pointers`."""

    overview: str
    overview_page: OverviewPageOut | None = Field(
        default=None, description="the compiled overview page (null before the first)"
    )
    summaries: list[SummaryOut]
    turn_id: str = Field(
        default="", description="pass to /v1/chunks as `turn` for the ids handed out here"
    )
    files: list[FileReferenceOut] = Field(default_factory=list, description=_FILES_DOC)
    more_files: bool = False
    untrusted_files: str = Field(default="", description="`files` as the lines a model reads")


class SubjectsBody(BaseModel):
    subjects: list[str] = Field(min_length=1, max_length=50)


class LifecycleOut(BaseModel):
    source_id: str
    state: Literal["deleting", "active"]
    message: str


class TagsBody(BaseModel):
    tags: list[str] = Field(max_length=50)


class UploadCreate(BaseModel):
    filename: str = Field(min_length=1, max_length=255)
    size: int = Field(ge=0)
    media_type: str = Field(default="", max_length=200)
    subjects: list[str] | None = Field(default=None, max_length=50)
    source_id: str | None = Field(
        default=None, max_length=100, description="add a version to this existing source"
    )


class UploadComplete(BaseModel):
    replace_existing: bool = Field(
        default=False,
        description="approve replacing a source's current content (the previous version stays readable)",
    )


class UploadOut(BaseModel):
    upload_id: str
    filename: str
    size: int
    received: int
    state: Literal["open", "completed", "refused", "cancelled"]
    source_id: str | None = None
    version_id: str | None = None


class ReferenceOut(BaseModel):
    url: str
    expires_at: str


class FileOut(BaseModel):
    """One file version. Never a storage key: bytes are read through a signed reference."""

    source_id: str
    version_id: str
    version_no: int
    filename: str
    declared_type: str
    sniffed_type: str
    size_bytes: int
    sha256: str
    state: Literal["pending", "stored", "quarantined", "deleting", "deleted"]
    processing_state: Literal["pending", "extracting", "extracted", "failed"]
    failure_reason: str | None
    low_confidence: bool
    is_current: bool
    created_at: str
    document_type: Literal["source", "artifact"] = Field(
        default="source", description="artifact: a generated artifact's document (one corpus)"
    )
    artifact_id: str | None = Field(default=None, description="the artifact, for an artifact")

    @classmethod
    def from_info(cls, info: FileVersionInfo) -> FileOut:
        fields = {name: getattr(info, name) for name in cls.model_fields if name != "created_at"}
        return cls(**fields, created_at=info.created_at.isoformat())


class FilePageOut(BaseModel):
    files: list[FileOut]
    next_cursor: str | None
    limit: int


def citation_out(citation: Citation) -> CitationOut:
    return CitationOut(**citation.to_response())  # type: ignore[arg-type]


class LimitsBody(BaseModel):
    """The limits to set; a field left out keeps its value, null clears it (no limit)."""

    requests_per_second: float | None = Field(default=None, gt=0)
    burst: int | None = Field(default=None, ge=1)
    key_requests_per_second: float | None = Field(default=None, gt=0)
    key_burst: int | None = Field(default=None, ge=1)
    max_documents: int | None = Field(default=None, ge=0)
    max_bytes: int | None = Field(default=None, ge=0)


class LimitsValues(BaseModel):
    requests_per_second: float | None
    burst: int | None
    key_requests_per_second: float | None
    key_burst: int | None
    max_documents: int | None
    max_bytes: int | None


class UsageOut(BaseModel):
    documents: int
    bytes: int


class LimitsOut(BaseModel):
    """A tenant's limits (null: no limit) and what it uses against its quotas."""

    tenant_id: str
    limits: LimitsValues
    usage: UsageOut


class SystemCorpusBody(BaseModel):
    enabled: bool = Field(description="whether the tenant reads the shared system corpus")


class SystemCorpusOut(BaseModel):
    tenant_id: str
    enabled: bool
