"""The full-stack scale corpus: Markdown documents recombined from SciFact sentences.

Each tenant draws a topic set (SciFact documents); each of its source
documents has `CHUNKS_PER_SOURCE` sections, and each section is one chunk
once the real pipeline has extracted and chunked it: a heading and three
sentences, each its own paragraph, two from one topic document and one from
another. Sentences are kept short (<= 200 characters and, given the model's
tokenizer, <= 80 tokens) so a section stays within the chunker's 256-token
budget and never splits: SciFact's longest 200-character sentences reach 94
tokens, and three of them would.

Why sentences of known documents: `TopicMixEmbedder` recognises them in a
chunk's text and gives the chunk a vector mixed from those documents' real
model vectors, so a chunk's keyword content and its vector agree in topic
(BM25 and the vector leg see the same neighbourhoods, as with real data) and
real queries find real neighbours in both legs.

Generation is deterministic per tenant (seeded by the tenant id), so a load
interrupted at tenant n resumes by regenerating the same bytes: registration
sees them unchanged.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

CHUNKS_PER_SOURCE = 20
SENTENCES_PER_CHUNK = (2, 1)  # from the section's first topic document, then its second
#: bounds that keep three sentences under 256 tokens and out of Markdown syntax
MIN_SENTENCE_CHARS = 40
MAX_SENTENCE_CHARS = 200
#: three of them and a heading path ("Notes t0001 00012 > Part 20", 13 tokens) fit 256
MAX_SENTENCE_TOKENS = 80
_MARKUP = re.compile(r"[*_`<>\[\]|#\\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
SHARE_TEAM_A = 0.85  # of sources readable by team:a; the rest team:b


def sentence_key(text: str) -> str:
    """What survives extraction of a sentence whatever Markdown did to it:
    lowercase letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _usable(sentence: str) -> bool:
    return (
        MIN_SENTENCE_CHARS <= len(sentence) <= MAX_SENTENCE_CHARS
        and sentence[0].isupper()
        and not _MARKUP.search(sentence)
    )


@dataclass(frozen=True, slots=True)
class TopicDocuments:
    """SciFact documents whose sentences make the corpus: `passages[i]` is
    what is embedded for document i, `sentences[i]` what chunks quote from it.
    A sentence that occurs in two documents is dropped from both, so a
    sentence names exactly one document."""

    passages: tuple[str, ...]
    sentences: tuple[tuple[str, ...], ...]

    def topic_of(self) -> dict[str, int]:
        return {
            sentence_key(s): doc for doc, sentences in enumerate(self.sentences) for s in sentences
        }


def topic_documents_from(
    texts: Sequence[str], limit: int, count_tokens: Callable[[str], int] | None = None
) -> TopicDocuments:
    """The first `limit` texts with at least one usable sentence (with
    `count_tokens`, the model's tokenizer: one of at most MAX_SENTENCE_TOKENS)."""
    split = [
        [
            s
            for s in _SENTENCE_END.split(t)
            if _usable(s) and (count_tokens is None or count_tokens(s) <= MAX_SENTENCE_TOKENS)
        ]
        for t in texts
    ]
    owners: dict[str, set[int]] = {}
    for doc, sentences in enumerate(split):
        for s in sentences:
            owners.setdefault(sentence_key(s), set()).add(doc)
    passages: list[str] = []
    kept: list[tuple[str, ...]] = []
    for sentences in split:
        mine = tuple(s for s in sentences if len(owners[sentence_key(s)]) == 1)
        if not mine:
            continue
        passages.append(" ".join(mine[:4]))
        kept.append(mine)
        if len(kept) == limit:
            break
    return TopicDocuments(tuple(passages), tuple(kept))


def load_topic_documents(
    corpus: Path, limit: int, count_tokens: Callable[[str], int] | None = None
) -> TopicDocuments:
    texts = [
        json.loads(line)["text"] for line in (corpus / "corpus.jsonl").read_text().splitlines()
    ]
    return topic_documents_from(texts, limit, count_tokens)


@dataclass(frozen=True, slots=True)
class SourceDocument:
    filename: str
    markdown: str
    subjects: tuple[str, ...]


def documents_for(
    tenant: str, size: int, topics: TopicDocuments, seed: int
) -> list[SourceDocument]:
    """`size` chunks' worth of documents for `tenant`: ceil(size / 20) sources,
    the last one shorter. Same arguments, same bytes."""
    rng = random.Random(f"{seed}:{tenant}")
    count = len(topics.sentences)
    topic_set = rng.sample(range(count), min(count, max(8, size // 25)))
    first, second = SENTENCES_PER_CHUNK
    out: list[SourceDocument] = []
    for d, start in enumerate(range(0, size, CHUNKS_PER_SOURCE)):
        sections = [f"# Notes {tenant} {d:05d}"]
        for k in range(min(CHUNKS_PER_SOURCE, size - start)):
            a, b = rng.choice(topic_set), rng.choice(topic_set)
            picked = rng.sample(topics.sentences[a], min(first, len(topics.sentences[a])))
            picked += rng.sample(topics.sentences[b], min(second, len(topics.sentences[b])))
            sections.append(f"## Part {k + 1}\n\n" + "\n\n".join(picked))
        subjects = ("team:a",) if rng.random() < SHARE_TEAM_A else ("team:b",)
        out.append(SourceDocument(f"notes/{d:05d}.md", "\n\n".join(sections) + "\n", subjects))
    return out
