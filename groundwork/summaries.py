"""The summary layer: one short summary per source and an overview per tenant,
each pointing at raw chunks by id. No generative model ships offline here, so
summaries are extractive (the source's lead sentences) and labelled so."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

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
    return extractive_summary_text(" ".join(chunk.body for chunk in chunks), max_words)


@runtime_checkable
class Summarizer(Protocol):
    """Writes a short summary of a source's text. `kind` labels the output
    ("extractive" or "generative") so a reader always knows which it got.
    Without one, `summarize_sources` uses the built-in extractive summary."""

    kind: str

    def summarize(self, title: str, text: str) -> str: ...


def extractive_summary_text(text: str, max_words: int = SUMMARY_WORDS) -> str:
    words: list[str] = []
    for sentence in _SENTENCE.split(" ".join(text.split())):
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
    summarizer: Summarizer | None = None,
) -> list[SourceSummary]:
    """Generative summarizers that fail fall back to extractive, labelled so."""
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
        text, kind = extractive_summary(lead or hits), "extractive"
        if summarizer is not None and summarizer.kind != "extractive":
            try:
                body = "\n\n".join(c.body for c in (lead or hits))
                text, kind = summarizer.summarize(anyone[0].title, body), summarizer.kind
            except Exception:  # a failing model endpoint must not fail the summary layer
                text, kind = extractive_summary(lead or hits), "extractive"
        summaries.append(
            SourceSummary(
                source_id=source_id,
                title=anyone[0].title,
                media_type=anyone[0].media_type,
                summary=text,
                kind=kind,
                pointers=tuple(pointers),
            )
        )
    return summaries
