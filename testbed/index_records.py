"""Builders shared by the index conformance suites."""

from __future__ import annotations

import hashlib
import random
import uuid
from collections.abc import Sequence
from datetime import datetime

from groundwork.ports import DocumentType, IndexedChunk, Layer


def new_tenant() -> str:
    return f"c-{uuid.uuid4().hex[:10]}"


def chunk(
    tenant_id: str,
    text: str,
    *,
    source_id: str = "src-1",
    version_id: str = "ver-1",
    subjects: Sequence[str] = ("team:a",),
    media_type: str = "text/markdown",
    chunk_id: str | None = None,
    tags: Sequence[str] = (),
    source_date: datetime | None = None,
    layer: Layer = "raw",
    document_type: DocumentType = "source",
) -> IndexedChunk:
    return IndexedChunk(
        chunk_id=chunk_id or f"ch-{uuid.uuid4().hex[:12]}",
        tenant_id=tenant_id,
        source_id=source_id,
        version_id=version_id,
        subjects=tuple(subjects),
        media_type=media_type,
        title="Test document",
        content=text,
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
        tags=tuple(tags),
        source_date=source_date,
        layer=layer,
        document_type=document_type,
    )


def unit_vector(seed: int, dimension: int) -> tuple[float, ...]:
    rng = random.Random(seed)
    values = [rng.gauss(0.0, 1.0) for _ in range(dimension)]
    norm = sum(v * v for v in values) ** 0.5
    return tuple(v / norm for v in values)


def near(vector: tuple[float, ...], seed: int, noise: float) -> tuple[float, ...]:
    other = unit_vector(seed, len(vector))
    mixed = [a + noise * b for a, b in zip(vector, other, strict=True)]
    norm = sum(v * v for v in mixed) ** 0.5
    return tuple(v / norm for v in mixed)
