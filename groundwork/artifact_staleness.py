"""Whether an artifact version is stale, and the sentences that tell the user
why: the rule once, whichever store supplies the facts.

A version records what it was derived from: chunks (id and the content hash it
read) and source versions. It is stale when a cited chunk's text changed or
the chunk is gone (its source deleted, or no such chunk in the tenant), or a
cited source has a newer version or was deleted. A store only reports what it
holds now (`CitationStates`); it never words a reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class CitedChunk:
    """A cited chunk as it stands: its text's hash now, and whether its source is active."""

    content_hash: str
    live: bool


@dataclass(frozen=True, slots=True)
class CitedSource:
    """A cited source as it stands: its current version, and whether it is active."""

    current_version_id: str | None
    live: bool


class CitationStates(Protocol):
    """What a store knows now of the chunks and sources an artifact cites.

    Contract: only the tenant's own rows answer; an id with no row in the
    tenant (missing, purged or another tenant's) is absent from the result,
    never an error, so staleness confirms nothing about other tenants.
    """

    def cited_chunks(self, tenant_id: str, chunk_ids: Sequence[str]) -> dict[str, CitedChunk]: ...

    def cited_sources(
        self, tenant_id: str, source_ids: Sequence[str]
    ) -> dict[str, CitedSource]: ...


def chunk_removed(chunk_id: str) -> str:
    return f"cited chunk {chunk_id} was removed (its source was deleted)"


def chunk_changed(chunk_id: str) -> str:
    return f"cited chunk {chunk_id} changed since the artifact was written"


def source_deleted(source_id: str) -> str:
    return f"source {source_id} was deleted"


def source_newer(source_id: str) -> str:
    return f"source {source_id} has a newer version than the one used"


def stale_reasons(
    states: CitationStates, tenant_id: str, derived_from: Sequence[Mapping[str, str]]
) -> list[str]:
    """Why the version deriving from `derived_from` is stale (empty: it is not);
    chunks first, then sources, each in id order."""
    chunk_refs = {r["chunk_id"]: r["content_hash"] for r in derived_from if "chunk_id" in r}
    source_refs = {r["source_id"]: r["version_id"] for r in derived_from if "source_id" in r}
    reasons: list[str] = []
    if chunk_refs:
        chunks = states.cited_chunks(tenant_id, sorted(chunk_refs))
        for chunk_id, recorded in sorted(chunk_refs.items()):
            now = chunks.get(chunk_id)
            if now is None or not now.live:
                reasons.append(chunk_removed(chunk_id))
            elif now.content_hash != recorded:
                reasons.append(chunk_changed(chunk_id))
    if source_refs:
        sources = states.cited_sources(tenant_id, sorted(source_refs))
        for source_id, version_id in sorted(source_refs.items()):
            found = sources.get(source_id)
            if found is None or not found.live:
                reasons.append(source_deleted(source_id))
            elif found.current_version_id != version_id:
                reasons.append(source_newer(source_id))
    return reasons
