"""Query embeddings kept for repeated queries.

A query's embedding is the largest share of a search's CPU in the API process
(about 4.5 of 13.5 ms, bench/search_profile.py), and callers repeat
themselves: an agent re-asks, a user pages, a dashboard refreshes. The model
gives the same vector for the same text (one text per inference, no batch
effects), so a cached vector is exactly the one the model would give again:
caching changes the cost, never the ranking.

Bounded in entries and in the size of each (long queries are not kept), and
stored as float32 (what the model computes), about 1.6 KB an entry.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence

from groundwork.embedding_models import EmbeddingModelRef
from groundwork.ports import EmbeddingProvider

#: entries kept per model (about 7 MB at 384 dimensions)
DEFAULT_CAPACITY = 4096
#: longer queries are embedded every time (rarely repeated, and they would
#: make the bound on memory a bound on count only)
MAX_QUERY_CHARS = 1000


def cache_key(text: str) -> str:
    """Whitespace runs are one separator to the tokenizers, so they are one here;
    case is kept (a cased model tells IL-6 from il-6)."""
    return " ".join(text.split())


class QueryEmbeddingCache:
    """An EmbeddingProvider that remembers the last `capacity` query vectors of
    the provider it wraps (least recently used goes first). Documents pass
    through: ingest never repeats a text it did not change."""

    def __init__(
        self,
        inner: EmbeddingProvider,
        capacity: int = DEFAULT_CAPACITY,
        max_query_chars: int = MAX_QUERY_CHARS,
    ) -> None:
        if capacity <= 0:
            raise ValueError("a query embedding cache needs room for at least one query")
        self._inner = inner
        self._capacity = capacity
        self._max_query_chars = max_query_chars
        self._entries: OrderedDict[str, array[float]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def model(self) -> EmbeddingModelRef:
        return self._inner.model

    def __len__(self) -> int:
        return len(self._entries)

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> tuple[float, ...]:
        key = cache_key(text)
        if len(key) > self._max_query_chars:
            return self._inner.embed_query(key)
        with self._lock:
            stored = self._entries.get(key)
            if stored is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return tuple(stored)
            self.misses += 1
        # the model runs outside the lock: other queries are not held up by it
        # (two callers of one new query may both run it; they get the same vector)
        vector = self._inner.embed_query(key)
        with self._lock:
            self._entries[key] = array("f", vector)
            self._entries.move_to_end(key)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)
        return vector
