"""The summary layer: one short summary per source and an overview per tenant,
each pointing at raw chunks by id. No generative model ships offline here, so
summaries are extractive (the source's lead sentences) unless a chat endpoint
is configured, and always labelled with the kind that produced them.

Summaries are compiled at ingest, per source version (`compile_summary`, run
by the summary stage): the page is chunked like any document into chunks of
the `summary` layer of the same version, so it is indexed, published, scoped
and erased with that version's raw chunks. The record of a compilation keeps
the raw chunks it points at (the drill-down ids) and a digest of the version's
raw chunks, so drift (raw chunks changed since compilation) can be detected.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from groundwork.chunking import Chunk, TokenCounter, approximate_tokens, chunk_id_for
from groundwork.documents import Location
from groundwork.retrieval.outcome import ChunkView

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
MAX_POINTERS = 5
SUMMARY_WORDS = 60
#: The compiled page's extractive length. Long enough to carry a document's
#: topic words (title + lead sentences), short enough to stay one chunk of the
#: embedding models' 256-token windows.
PAGE_WORDS = 120
#: A generative summary is bounded like any text a model returns.
MAX_PAGE_CHARS = 4_000


@dataclass(frozen=True, slots=True)
class SourceSummary:
    source_id: str
    title: str
    media_type: str
    summary: str
    kind: str  # "extractive" (or "generative" when a model endpoint produced it)
    pointers: tuple[str, ...]  # chunk ids, copied verbatim for drill-down
    version_id: str = ""  # the source version a compiled summary was compiled from
    model: str = ""  # the generative model that wrote it
    compiled: bool = False  # compiled at ingest (False: summarized at query time)
    stale: bool = False  # marked for recompilation by the drift check


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


@dataclass(frozen=True, slots=True)
class RawChunk:
    """A raw chunk as the summary compiler reads it (position order)."""

    chunk_id: str
    position: int
    heading_path: tuple[str, ...]
    body: str
    content_hash: str
    location: Location


@dataclass(frozen=True, slots=True)
class CompiledSummary:
    """How one source version's summary page was compiled. `text` is the page
    (empty when read back without it); `raw_digest` digests the version's raw
    chunks at compilation (see `raw_digest`)."""

    source_id: str
    version_id: str
    title: str
    kind: str  # "extractive" | "generative"
    model: str  # the generative model's name; "" for extractive
    text: str
    pointers: tuple[str, ...]  # raw chunk ids, for drill-down
    raw_digest: str
    stale: bool = False  # marked for recompilation by the drift check
    media_type: str = ""  # of the version (filled when read back)


def raw_digest(chunks: Iterable[tuple[str, str]]) -> str:
    """A digest of a version's raw chunks as (chunk id, content hash) pairs:
    sha256 over `id:hash` lines in chunk-id order (byte order). The PostgreSQL
    catalog computes the same digest in SQL for the drift check; the summary
    conformance suite proves the two agree."""
    lines = sorted(f"{chunk_id}:{content}" for chunk_id, content in chunks)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class SummaryTarget:
    """The version a summary is compiled for."""

    tenant_id: str
    source_id: str
    version_id: str
    title: str


def compile_summary(
    target: SummaryTarget,
    raw: Sequence[RawChunk],
    summarizer: Summarizer | None = None,
    count_tokens: TokenCounter = approximate_tokens,
    max_tokens: int = 256,
) -> tuple[CompiledSummary, list[Chunk]]:
    """The version's summary page and its chunks (layer `summary`). Extractive
    (title, then lead sentences) unless a generative summarizer is given; one
    that fails falls back to extractive, labelled so: a model endpoint that is
    down must not stop a version from being published."""
    ordered = sorted(raw, key=lambda c: c.position)
    body = "\n\n".join(c.body for c in ordered)
    text, kind, model = extractive_summary_text(body, PAGE_WORDS), "extractive", ""
    if summarizer is not None and summarizer.kind != "extractive" and body.strip():
        try:
            generated = " ".join(summarizer.summarize(target.title, body).split())
            if generated:
                text = generated[:MAX_PAGE_CHARS]
                kind, model = summarizer.kind, str(getattr(summarizer, "model", ""))
        except Exception:  # a failing model endpoint must not fail the summary layer
            pass
    summary = CompiledSummary(
        source_id=target.source_id,
        version_id=target.version_id,
        title=target.title,
        kind=kind,
        model=model,
        text=text,
        pointers=tuple(c.chunk_id for c in ordered[:MAX_POINTERS]),
        raw_digest=raw_digest((c.chunk_id, c.content_hash) for c in ordered),
    )
    location = ordered[0].location if ordered else Location()
    heading = (target.title,) if target.title else ()
    chunks = [
        Chunk(
            chunk_id=chunk_id_for(target.tenant_id, target.version_id, position, "summary"),
            tenant_id=target.tenant_id,
            source_id=target.source_id,
            version_id=target.version_id,
            position=position,
            heading_path=heading,
            body=piece,
            location=location,
            kind="text",
            token_count=count_tokens(" > ".join(heading) + "\n\n" + piece),
            layer="summary",
        )
        for position, piece in enumerate(_pieces(text, count_tokens, max_tokens))
    ]
    return summary, chunks


def _pieces(text: str, count_tokens: TokenCounter, max_tokens: int) -> list[str]:
    """The page cut at sentence ends into pieces of at most `max_tokens` (a
    sentence longer than that is its own piece: the index bounds it)."""
    pieces: list[str] = []
    current: list[str] = []
    for sentence in _SENTENCE.split(text.strip()):
        if not sentence:
            continue
        if current and count_tokens(" ".join([*current, sentence])) > max_tokens:
            pieces.append(" ".join(current))
            current = []
        current.append(sentence)
    if current:
        pieces.append(" ".join(current))
    return pieces
