"""Rerankers: reorder fused candidates. The port is switchable per request and
its contribution is measured by the evals (hybrid vs hybrid + reranker).

No cross-encoder model ships inside a registry package that works offline
here (PyPI, Maven Central and npm were searched), so the built-in adapter is
the identifier reranker; a reranker the user already runs (a Cohere-, Jina- or
TEI-style `/rerank` endpoint, vLLM) is `resources.models.rerank_http`, off by
default. A remote one may fail: the kernel then ranks with the local one and
the outcome says so (`Found.degraded`), so a slow endpoint costs at most its
timeout and never an answer.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from groundwork.retrieval.query import InterpretedQuery, code_pattern


@dataclass(frozen=True, slots=True)
class RerankCandidate:
    chunk_id: str
    text: str
    #: what fusion knew of it, for a reranker that learns from the legs
    #: (groundwork.retrieval.learned_rank); a text-only reranker ignores them
    fused_score: float = 0.0
    leg_ranks: tuple[tuple[str, int], ...] = ()  # leg name -> 1-based rank in that leg
    #: leg name -> that leg's own score for it (cosine similarity, BM25)
    leg_scores: tuple[tuple[str, float], ...] = ()
    source_id: str = ""
    heading_path: tuple[str, ...] = ()


@runtime_checkable
class Reranker(Protocol):
    """Returns candidate ids in a better order. It may return a subset or
    nothing; the kernel then falls back to fusion order for what is missing.
    An adapter that cannot answer (endpoint down, slow past its timeout, its
    circuit open) raises `EngineUnavailable`; it never returns an empty list
    to mean failure, which would read as "no opinion"."""

    def rerank(
        self, query: InterpretedQuery, candidates: Sequence[RerankCandidate]
    ) -> list[str]: ...

    def reorders(self, query: InterpretedQuery) -> bool:
        """False when this query's answer is fusion's order whatever the
        candidates: the search then builds none (each one's text and leg
        scores) and does not call `rerank`."""
        ...


class IdentifierReranker:
    """Lifts candidates that contain the query's identifier-shaped terms
    (ERR-4021, Q3-2026) as whole tokens by at most `max_lift` places, in
    proportion to how many of the terms they contain. A bounded lift, not a
    partition: on SciFact, where claims carry many hyphenated and numeric terms
    (IL-6, 5-year), moving every match to the front cost 0.04 nDCG@10; on
    long queries that merely contain a code a small lift is what helps.
    Only codes count (query.is_code: a letter first, a digit somewhere, as in
    ERR-4021, Q3-2026, IL-6): a bare number or year ("Super Bowl 50", "2015"),
    an ordinal or quantity ("50th", "5-year") or a hyphenated word is ordinary
    text, and lifting every passage that contains it cost SQuAD 0.02.
    A lookup (the code and at most two other words: "IL-6 findings", "which
    paper mentions METTL3") is the exception: there the user wants what names
    the code, and every candidate naming it goes first.
    Candidates are read as the keyword leg indexed them, heading path then body:
    a code in a document's title is in its chunks' heading path.
    Without such identifiers in the query it changes nothing."""

    def __init__(self, max_lift: int = 3, k: int = 60) -> None:
        self.bonus = 1.0 / (k + 1) - 1.0 / (k + 1 + max_lift)
        self.k = k

    def reorders(self, query: InterpretedQuery) -> bool:
        return bool(query.codes)

    def rerank(self, query: InterpretedQuery, candidates: Sequence[RerankCandidate]) -> list[str]:
        strong = query.codes
        if not strong:
            return [c.chunk_id for c in candidates]
        patterns = [(term.lower(), re.compile(code_pattern(term), re.I)) for term in strong]

        def score(position: int, candidate: RerankCandidate) -> float:
            # a substring test first: most candidates lack the term, and the
            # whole-token regex is what a search spent most of its rerank time on
            lowered = candidate.text.lower()
            matched = sum(
                1 for term, p in patterns if term in lowered and p.search(candidate.text)
            ) / len(patterns)
            if query.is_lookup:
                # a lookup ("IL-6 findings"): what names the code goes first,
                # however far down fusion put it (issue 20: the bounded lift left
                # the one document naming c45 or hdac-1 at rank 2)
                return float(matched) + 1.0 / (self.k + 1 + position)
            return 1.0 / (self.k + 1 + position) + self.bonus * matched

        ranked = sorted(enumerate(candidates), key=lambda item: (-score(item[0], item[1]), item[0]))
        return [c.chunk_id for _, c in ranked]


class CircuitBreaker:
    """Stops calling an endpoint that keeps failing: after `failures` failures in
    a row it is open for `cool_down` seconds (calls are refused at once, so a
    dead endpoint costs searches nothing), then one call is let through; its
    success closes the circuit, its failure opens it again. The clock is
    injected so the tests need no sleeps."""

    def __init__(
        self,
        failures: int = 3,
        cool_down: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failures < 1 or cool_down <= 0:
            raise ValueError("a breaker needs failures >= 1 and a positive cool-down")
        self.failures = failures
        self.cool_down = cool_down
        self.clock = clock
        self._lock = threading.Lock()
        self._in_a_row = 0
        self._open_until = 0.0

    def allow(self) -> bool:
        with self._lock:
            return self.clock() >= self._open_until

    def succeeded(self) -> None:
        with self._lock:
            self._in_a_row = 0
            self._open_until = 0.0

    def failed(self) -> None:
        with self._lock:
            self._in_a_row += 1
            if self._in_a_row >= self.failures:
                self._open_until = self.clock() + self.cool_down
