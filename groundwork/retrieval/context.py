"""Context-budget selection: what a model is handed.

Hits are taken in rank order into a token budget, at most `per_source_cap`
chunks per source, skipping chunks whose text repeats one already taken
(overlap between neighbouring chunks); then, while budget remains, a taken
chunk is expanded to its whole section (the chunks that share its heading
path), so a model sees the paragraph's surroundings when they fit.

With `query_terms`, a hit that no longer fits whole is not skipped while the
budget has room: its sentences that share the most query terms are taken, in
their own order, as many as fit (the item says `trimmed`; its citation is the
whole chunk's).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from groundwork.reading import fence_untrusted
from groundwork.retrieval.outcome import ChunkView, Hit
from groundwork.retrieval.query import STOPWORDS, interpret

TokenCounter = Callable[[str], int]
SectionLoader = Callable[[ChunkView], list[ChunkView]]


@dataclass(frozen=True, slots=True)
class ContextItem:
    hit: Hit
    chunks: tuple[ChunkView, ...]  # the hit's chunk, or its whole section when expanded
    tokens: int
    expanded: bool
    #: the chunk cut to its sentences that fit (query terms first); never expanded
    trimmed: bool = False


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


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")
_WORD = re.compile(r"\w+", re.UNICODE)
#: below this many tokens left, no sentence of a chunk is worth its header
MIN_TRIMMED_TOKENS = 24


def context_terms(query: str) -> frozenset[str]:
    """The query's words as the keyword leg reads them (stopwords off), lower-cased."""
    words = _WORD.findall(interpret(query).keyword_text.lower())
    return frozenset(w for w in words if w not in STOPWORDS)


def fitted_sentences(
    body: str, query_terms: Collection[str], budget: int, count_tokens: TokenCounter
) -> tuple[str, int] | None:
    """The body's sentences that share the most query terms (ties: the earlier),
    as many as fit in `budget` tokens, in their own order; None when none fits."""
    sentences = [s for s in _SENTENCE_END.split(body.strip()) if s.strip()]
    scored = sorted(
        range(len(sentences)),
        key=lambda i: (-len(set(_WORD.findall(sentences[i].lower())) & set(query_terms)), i),
    )
    taken: list[int] = []
    used = 0
    for i in scored:
        tokens = count_tokens(sentences[i])
        if used + tokens <= budget:
            taken.append(i)
            used += tokens
    if not taken:
        return None
    text = " ".join(sentences[i] for i in sorted(taken))
    return text, count_tokens(text)


def select_context(
    hits: Sequence[Hit],
    budget_tokens: int,
    count_tokens: TokenCounter,
    per_source_cap: int = 3,
    load_section: SectionLoader | None = None,
    query_terms: Collection[str] | None = None,
) -> ContextSelection:
    chosen: list[ContextItem] = []
    used = 0
    per_source: dict[str, int] = {}
    seen_hashes: set[str] = set()
    skipped_cap = skipped_duplicate = 0
    too_long: list[Hit] = []
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
            too_long.append(hit)
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
    skipped_budget = len(too_long)
    if query_terms is not None:
        # what is left of the budget goes to the hits that did not fit whole, in
        # rank order, cut to their sentences that share the most query terms
        # (one already inside an expanded section is there whole)
        inside = {c.chunk_id for item in chosen for c in item.chunks}
        for hit in too_long:
            chunk, left = hit.chunk, budget_tokens - used
            if left < MIN_TRIMMED_TOKENS:
                break
            if chunk.chunk_id in inside or per_source.get(chunk.source_id, 0) >= per_source_cap:
                continue
            fitted = fitted_sentences(chunk.body, query_terms, left, count_tokens)
            if fitted is None:
                continue
            text, tokens = fitted
            chosen.append(ContextItem(hit, (replace(chunk, body=text),), tokens, False, True))
            used += tokens
            skipped_budget -= 1
            per_source[chunk.source_id] = per_source.get(chunk.source_id, 0) + 1
        handed = {id(hit): n for n, hit in enumerate(hits)}
        chosen.sort(key=lambda item: handed[id(item.hit)])  # the order the hits came in
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
