"""Request bodies of the page-composition routes (reorder, insert, rotate),
beside merge/split/watermark in retrieval_api.artifact_schemas."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from retrieval_api.artifact_schemas import FileRef


class ReorderRequest(BaseModel):
    input: FileRef
    order: list[int] = Field(
        min_length=1, max_length=5000, description="every page once, 1-based, in the new order"
    )
    filename: str = Field(min_length=5, max_length=255)


class InsertRequest(BaseModel):
    input: FileRef
    insert: FileRef = Field(description="the PDF whose pages are inserted")
    after: int = Field(ge=0, le=5000, description="the page they follow (0: before the first)")
    filename: str = Field(min_length=5, max_length=255)


class RotateRequest(BaseModel):
    input: FileRef
    pages: str = Field(min_length=1, max_length=500, description="page ranges, e.g. 1-3,5")
    degrees: Literal[90, 180, 270] = Field(description="clockwise")
    filename: str = Field(min_length=5, max_length=255)
