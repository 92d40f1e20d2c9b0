"""Taking a version through the catalog's stages as the pipeline does, for
the StageProgress and LifecycleLedger suites: registration (pending, then the
compare-and-set to stored), extraction, chunks, its summary, both indexes,
publication.
Only the ports are called, so each step means the same on every adapter."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol

from groundwork.catalog import (
    LifecycleLedger,
    PendingVersion,
    RegistrationLedger,
    StageProgress,
    SummaryLedger,
    TenantDirectory,
    VersionRecord,
)
from groundwork.chunking import Chunk, chunk_id_for
from groundwork.documents import ExtractedDocument, Location
from groundwork.extract import extract
from groundwork.summaries import CompiledSummary, raw_digest

MODEL_A = "model-a"
MODEL_B = "model-b"


class PipelineLedger(RegistrationLedger, StageProgress, SummaryLedger, Protocol):
    """Versions registered, then taken through the stages."""


class LifecycleCatalog(
    TenantDirectory, RegistrationLedger, StageProgress, SummaryLedger, LifecycleLedger, Protocol
):
    """Tenants and their serving model, versions through the stages, then their end."""


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def document(text: str) -> ExtractedDocument:
    result = extract(text.encode(), "text/markdown", "doc.md")
    assert isinstance(result, ExtractedDocument)
    return result


def chunks_of(version: VersionRecord, count: int, label: str = "body") -> list[Chunk]:
    """`count` chunks of the version; the first under a heading (its content
    carries the heading path), ids derived from the version and position."""
    return [
        Chunk(
            chunk_id=chunk_id_for(version.tenant_id, version.version_id, position),
            tenant_id=version.tenant_id,
            source_id=version.source_id,
            version_id=version.version_id,
            position=position,
            heading_path=("Intro",) if position == 0 else (),
            body=f"{label} {position} of {version.version_no}",
            location=Location(line_start=position + 1, line_end=position + 1),
            kind="text",
            token_count=4,
        )
        for position in range(count)
    ]


def ids(chunks: Sequence[Chunk]) -> set[str]:
    return {c.chunk_id for c in chunks}


def begin(
    ledger: RegistrationLedger,
    tenant: str,
    origin: str,
    text: str,
    subjects: Sequence[str] = ("team:a",),
) -> PendingVersion:
    begun = ledger.begin_version(
        tenant,
        origin,
        origin.rsplit(":", 1)[-1],
        subjects,
        sha(text),
        len(text),
        "text/markdown",
    )
    assert isinstance(begun, PendingVersion)
    return begun


def stored(
    ledger: RegistrationLedger,
    tenant: str,
    origin: str,
    text: str,
    subjects: Sequence[str] = ("team:a",),
) -> PendingVersion:
    begun = begin(ledger, tenant, origin, text, subjects)
    assert ledger.mark_stored(begun.version_id)
    return begun


def extracted(ledger: PipelineLedger, tenant: str, origin: str, text: str) -> str:
    begun = stored(ledger, tenant, origin, text)
    assert ledger.claim_extraction(begun.version_id)
    ledger.save_extraction(begun.version_id, document(f"# {origin}\n\n{text}"))
    return begun.version_id


def chunked(
    ledger: PipelineLedger, tenant: str, origin: str, text: str, count: int = 2
) -> tuple[VersionRecord, list[Chunk]]:
    version_id = extracted(ledger, tenant, origin, text)
    version = next(
        v for v, _ in ledger.versions_to_chunk(tenant, 100) if v.version_id == version_id
    )
    chunks = chunks_of(version, count)
    ledger.replace_chunks(version, chunks)
    summarized(ledger, version, chunks)
    return version, chunks


def summarized(
    ledger: SummaryLedger, version: VersionRecord, chunks: Sequence[Chunk]
) -> CompiledSummary:
    """The summary stage's record with an empty page (no summary chunks), so the
    suites about the raw layer see exactly the chunks they wrote; the summary
    suite writes real pages."""
    summary = CompiledSummary(
        source_id=version.source_id,
        version_id=version.version_id,
        title=version.filename,
        kind="extractive",
        model="",
        text="",
        pointers=tuple(c.chunk_id for c in chunks[:5]),
        raw_digest=raw_digest((c.chunk_id, c.content_hash) for c in chunks),
    )
    ledger.save_summary(version, summary, [])
    return summary


def indexed(ledger: StageProgress, version: VersionRecord, *models: str) -> None:
    """In the keyword index, and embedded for each of `models`."""
    ledger.mark_keyword_indexed_many([version.version_id])
    for model in models:
        ledger.mark_embedded(version.version_id, version.tenant_id, model)


def published(
    ledger: PipelineLedger,
    tenant: str,
    origin: str,
    text: str,
    models: Sequence[str] = (MODEL_A,),
    count: int = 2,
) -> tuple[VersionRecord, list[Chunk]]:
    version, chunks = chunked(ledger, tenant, origin, text, count)
    indexed(ledger, version, *models)
    for model in models:
        ledger.mark_published_many([version.version_id], model)
    return version, chunks
