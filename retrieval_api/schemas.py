"""Request and response bodies: the API's contract, published as OpenAPI."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Filters(BaseModel):
    source_ids: list[str] | None = Field(default=None, max_length=100)
    media_types: list[str] | None = Field(default=None, max_length=20)


class SearchBody(BaseModel):
    query: str = Field(min_length=1, max_length=2000)
    limit: int = Field(default=10, ge=1, le=100)
    mode: Literal["hybrid", "vector", "keyword"] = "hybrid"
    filters: Filters | None = None


class CitationOut(BaseModel):
    source_id: str
    source_version_id: str
    chunk_id: str
    content_hash: str
    title: str
    location: dict[str, object]
    location_label: str
    heading_path: list[str]
    excerpt: str
    retrieved_at: str
    low_confidence: bool


class HitOut(BaseModel):
    rank: int
    score: float
    leg_ranks: dict[str, int]
    chunk_id: str
    source_id: str
    title: str
    filename: str
    media_type: str
    heading_path: list[str]
    text: str
    citation: CitationOut


class SearchResponse(BaseModel):
    outcome: Literal["found", "nothing_accessible", "nothing_matches", "nothing_close_enough"]
    message: str
    model: str
    hits: list[HitOut] = Field(default_factory=list)


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
    text: str
    level: int | None
    location: dict[str, object]
    location_label: str
    confidence: float | None
    table: list[list[str]] | None


class ReadOut(BaseModel):
    """A window of an extracted document. `content` is the window as Markdown,
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
    content: str = ""
    reason: str | None = None
    guidance: str | None = None
    retry_may_help: bool | None = None


class ErrorOut(BaseModel):
    error: str
    message: str


class TableOut(BaseModel):
    rows: list[list[str]]
    header_rows: int
    location: dict[str, object]
    location_label: str
    heading_path: list[str]


class TablesOut(BaseModel):
    source_id: str
    version_id: str
    tables: list[TableOut]
    reason: str | None = None
