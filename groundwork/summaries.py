"""The summary layer: one short summary per source and an overview per tenant,
each pointing at raw chunks by id. No generative model ships offline here, so
summaries are extractive (the source's lead sentences) and labelled so."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from groundwork.retrieval.outcome import ChunkView

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
MAX_POINTERS = 5
SUMMARY_WORDS = 60


@dataclass(frozen=True, slots=True)
class SourceSummary:
    source_id: str
    title: str
    media_type: str
    summary: str
    kind: str  # "extractive" (or "generative" when a model endpoint produced it)
    pointers: tuple[str, ...]  # chunk ids, copied verbatim for drill-down


def extractive_summary(chunks: Sequence[ChunkView], max_words: int = SUMMARY_WORDS) -> str:
    """The lead sentences of the source, up to about `max_words` words."""
    words: list[str] = []
    for chunk in chunks:
        for sentence in _SENTENCE.split(" ".join(chunk.body.split())):
            if not sentence or sentence.startswith("|"):
                continue
            words.extend(sentence.split())
            if len(words) >= max_words:
                return " ".join(words[:max_words]) + ("…" if len(words) > max_words else "")
    return " ".join(words)


def summarize_sources(
    ordered_sources: Sequence[str],
    hits_by_source: dict[str, list[ChunkView]],
    lead_chunks: dict[str, list[ChunkView]],
) -> list[SourceSummary]:
    summaries: list[SourceSummary] = []
    for source_id in ordered_sources:
        lead = lead_chunks.get(source_id, [])
        hits = hits_by_source.get(source_id, [])
        anyone = (hits or lead)[:1]
        if not anyone:
            continue
        pointers = list(dict.fromkeys([c.chunk_id for c in hits] + [c.chunk_id for c in lead]))[
            :MAX_POINTERS
        ]
        summaries.append(
            SourceSummary(
                source_id=source_id,
                title=anyone[0].title,
                media_type=anyone[0].media_type,
                summary=extractive_summary(lead or hits),
                kind="extractive",
                pointers=tuple(pointers),
            )
        )
    return summaries
