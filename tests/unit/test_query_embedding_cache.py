"""The query-embedding cache: a repeated query costs no model run, and gets the
very vector the model gives."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from groundwork.embedding_cache import QueryEmbeddingCache
from groundwork.embedding_models import BGE_SMALL_EN_V15_Q, EmbeddingModelRef
from groundwork.ports import EmbeddingProvider


class CountingEmbedder:
    """A stand-in model: the vector names the text, and every run is counted."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.documents: list[str] = []
        self._lock = threading.Lock()

    @property
    def model(self) -> EmbeddingModelRef:
        return BGE_SMALL_EN_V15_Q

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        self.documents.extend(texts)
        return [(float(len(t)), 1.0) for t in texts]

    def embed_query(self, text: str) -> tuple[float, ...]:
        with self._lock:
            self.queries.append(text)
        return (float(len(text)), float(sum(map(ord, text))))

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_is_the_port_and_keeps_the_model() -> None:
    cache = QueryEmbeddingCache(CountingEmbedder(), capacity=4)
    assert isinstance(cache, EmbeddingProvider)
    assert cache.model == BGE_SMALL_EN_V15_Q
    assert cache.count_tokens("two words") == 2


def test_a_repeated_query_runs_the_model_once_and_gets_its_vector() -> None:
    inner = CountingEmbedder()
    cache = QueryEmbeddingCache(inner, capacity=4)
    first = cache.embed_query("vitamin D and fractures")
    again = cache.embed_query("vitamin D and fractures")
    assert first == again == inner.embed_query("vitamin D and fractures")
    assert inner.queries.count("vitamin D and fractures") == 2  # one by the cache, one above
    assert cache.hits == 1 and cache.misses == 1


def test_spacing_does_not_make_a_new_query() -> None:
    """The tokenizer splits on whitespace, so these are one query to the model."""
    inner = CountingEmbedder()
    cache = QueryEmbeddingCache(inner, capacity=4)
    cache.embed_query("  vitamin D \t and\nfractures ")
    cache.embed_query("vitamin D and fractures")
    assert inner.queries == ["vitamin D and fractures"]


def test_case_is_kept_apart() -> None:
    """Whether case matters is the model's business, not the cache's."""
    inner = CountingEmbedder()
    cache = QueryEmbeddingCache(inner, capacity=4)
    cache.embed_query("IL-6")
    cache.embed_query("il-6")
    assert inner.queries == ["IL-6", "il-6"]


def test_least_recently_used_goes_first_and_size_is_bounded() -> None:
    inner = CountingEmbedder()
    cache = QueryEmbeddingCache(inner, capacity=2)
    cache.embed_query("a")
    cache.embed_query("b")
    cache.embed_query("a")  # a is now the most recent
    cache.embed_query("c")  # evicts b
    assert len(cache) == 2
    cache.embed_query("a")
    cache.embed_query("b")
    assert inner.queries == ["a", "b", "c", "b"]


def test_documents_are_never_cached() -> None:
    inner = CountingEmbedder()
    cache = QueryEmbeddingCache(inner, capacity=4)
    cache.embed_documents(["same text"])
    cache.embed_documents(["same text"])
    assert inner.documents == ["same text", "same text"]
    assert len(cache) == 0


def test_long_queries_are_not_kept() -> None:
    """Entries are bounded in size as well as in number."""
    inner = CountingEmbedder()
    cache = QueryEmbeddingCache(inner, capacity=4, max_query_chars=10)
    cache.embed_query("x" * 11)
    cache.embed_query("x" * 11)
    assert len(cache) == 0 and len(inner.queries) == 2


def test_concurrent_callers_get_one_answer() -> None:
    inner = CountingEmbedder()
    cache = QueryEmbeddingCache(inner, capacity=64)
    results: list[tuple[float, ...]] = []
    lock = threading.Lock()

    def ask() -> None:
        for i in range(50):
            vector = cache.embed_query(f"query {i % 10}")
            with lock:
                results.append(vector)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 400
    assert len(set(results)) == 10
    assert len(cache) == 10


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError):
        QueryEmbeddingCache(CountingEmbedder(), capacity=0)
