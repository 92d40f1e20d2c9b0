"""A bench-only EmbeddingProvider: real model geometry without embedding a million texts.

Two cores embed bge-small at a few dozen chunks a second, so a 1M-chunk
corpus cannot be embedded for real. This provider gives a chunk whose text
quotes sentences of known SciFact documents (`testbed/scale_corpus.py`) the
normalised mix of those documents' real model vectors: the document most of
its sentences come from at weight 1, any other at `SECOND_WEIGHT`, plus
Gaussian noise seeded by the text's hash (so the same text always gets the
same vector, in any batch). A text with no known sentence is embedded by the
real model, and queries always are: query/document geometry is the real
model's.

It lives in `bench/` only and is injected into a copy of the platform for a
benchmark's load; production code never imports `bench` (an import-linter
contract says so).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence

import numpy as np

from groundwork.embedding_models import EmbeddingModelRef
from groundwork.ports import EmbeddingProvider
from testbed.scale_corpus import sentence_key

SECOND_WEIGHT = 0.35


class TopicMixEmbedder:
    def __init__(
        self,
        real: EmbeddingProvider,
        bases: np.ndarray,
        topic_of: Mapping[str, int],
        noise: float = 0.45,
    ) -> None:
        """`bases[i]`: the real model's vector of topic document i; `topic_of`:
        a sentence's key -> its document; `noise`: expected norm of the noise."""
        if bases.ndim != 2 or bases.shape[1] != real.model.dimension:
            raise ValueError(f"bases must be n x {real.model.dimension}, not {bases.shape}")
        self.real = real
        self.bases = bases.astype(np.float32)
        self.topic_of = topic_of
        self.sigma = noise / np.sqrt(real.model.dimension)
        self._lock = threading.Lock()
        self.mixed = 0  # texts given a mixed vector
        self.embedded = 0  # texts the real model embedded (no known sentence)

    @property
    def model(self) -> EmbeddingModelRef:
        return self.real.model

    def topics(self, text: str) -> list[int]:
        """The documents the text's paragraphs quote, by how many it quotes, most first."""
        counts: dict[int, int] = {}
        for paragraph in text.split("\n\n"):
            doc = self.topic_of.get(sentence_key(paragraph))
            if doc is not None:
                counts[doc] = counts.get(doc, 0) + 1
        return sorted(counts, key=lambda d: -counts[d])  # stable: first quoted wins a tie

    def _mixed(self, text: str, topics: list[int]) -> tuple[float, ...]:
        vector = self.bases[topics[0]].copy()
        for doc in topics[1:]:
            vector += SECOND_WEIGHT * self.bases[doc]
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        vector += np.random.default_rng(seed).normal(0.0, self.sigma, vector.shape)
        vector /= np.linalg.norm(vector)
        return tuple(float(x) for x in vector)

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        out: list[tuple[float, ...] | None] = []
        unknown: list[int] = []
        for i, text in enumerate(texts):
            topics = self.topics(text)
            if topics:
                out.append(self._mixed(text, topics))
            else:
                out.append(None)
                unknown.append(i)
        if unknown:
            for i, vector in zip(
                unknown, self.real.embed_documents([texts[i] for i in unknown]), strict=True
            ):
                out[i] = vector
        with self._lock:
            self.mixed += len(texts) - len(unknown)
            self.embedded += len(unknown)
        return [v for v in out if v is not None]

    def embed_query(self, text: str) -> tuple[float, ...]:
        return self.real.embed_query(text)

    def count_tokens(self, text: str) -> int:
        return self.real.count_tokens(text)
