"""Context-budget selection: what a model is handed.

Hits are taken in rank order into a token budget, at most `per_source_cap`
chunks per source, skipping chunks whose text repeats one already taken
(overlap between neighbouring chunks); then, while budget remains, a taken
chunk is expanded to its whole section (the chunks that share its heading
path), so a model sees the paragraph's surroundings when they fit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from groundwork.reading import fence_untrusted
from groundwork.retrieval.outcome import ChunkView, Hit

TokenCounter = Callable[[str], int]
SectionLoader = Callable[[ChunkView], list[ChunkView]]


@dataclass(frozen=True, slots=True)
class ContextItem:
    hit: Hit
    chunks: tuple[ChunkView, ...]  # the hit's chunk, or its whole section when expanded
    tokens: int
    expanded: bool


@dataclass(frozen=True, slots=True)
class ContextSelection:
    items: tuple[ContextItem, ...]
    used_tokens: int
    budget_tokens: int
    skipped_for_budget: int
    skipped_for_source_cap: int
    skipped_as_duplicate: int


def _text(chunks: Sequence[ChunkView]) -> str:
    return "\n\n".join(c.body for c in chunks)


def select_context(
    hits: Sequence[Hit],
    budget_tokens: int,
    count_tokens: TokenCounter,
    per_source_cap: int = 3,
    load_section: SectionLoader | None = None,
) -> ContextSelection:
    chosen: list[ContextItem] = []
    used = 0
    per_source: dict[str, int] = {}
    seen_hashes: set[str] = set()
    skipped_budget = skipped_cap = skipped_duplicate = 0
    for hit in hits:
        chunk = hit.chunk
        if chunk.content_hash in seen_hashes:
            skipped_duplicate += 1
            continue
        if per_source.get(chunk.source_id, 0) >= per_source_cap:
            skipped_cap += 1
            continue
        tokens = count_tokens(chunk.body)
        if used + tokens > budget_tokens:
            skipped_budget += 1
            continue
        chosen.append(ContextItem(hit, (chunk,), tokens, expanded=False))
        used += tokens
        per_source[chunk.source_id] = per_source.get(chunk.source_id, 0) + 1
        seen_hashes.add(chunk.content_hash)
    if load_section is not None:
        taken = {c.chunk_id for item in chosen for c in item.chunks}
        for i, item in enumerate(chosen):
            section = [
                c
                for c in load_section(item.hit.chunk)
                if c.chunk_id == item.hit.chunk.chunk_id or c.chunk_id not in taken
            ]
            if len(section) <= 1:
                continue
            tokens = count_tokens(_text(section))
            if used - item.tokens + tokens > budget_tokens:
                continue
            used += tokens - item.tokens
            chosen[i] = ContextItem(item.hit, tuple(section), tokens, expanded=True)
            taken.update(c.chunk_id for c in section)
    return ContextSelection(
        items=tuple(chosen),
        used_tokens=used,
        budget_tokens=budget_tokens,
        skipped_for_budget=skipped_budget,
        skipped_for_source_cap=skipped_cap,
        skipped_as_duplicate=skipped_duplicate,
    )


def render_context_entry(marker: int, hit: Hit, chunks: Sequence[ChunkView]) -> str:
    """One selected item as `/v1/context` hands it to a model: a citation marker
    and header, then the text fenced as untrusted document data."""
    citation = hit.citation
    header = f"[{marker}] {citation.title} ({citation.location.label()})"
    return f"{header}\n{fence_untrusted(_text(chunks), citation.source_id)}"


def render_context(selection: ContextSelection) -> str:
    """The whole selection, markers from 1 in selection order."""
    return "\n\n".join(
        render_context_entry(n, item.hit, item.chunks)
        for n, item in enumerate(selection.items, start=1)
    )
