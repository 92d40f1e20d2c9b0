"""Rerankers: reorder fused candidates. The port is switchable per request and
its contribution is measured by the evals (hybrid vs hybrid + reranker).

No cross-encoder model ships inside a registry package that works offline
here (PyPI, Maven Central and npm were searched), so the only adapter is the
built-in identifier reranker; there is no adapter without a real model behind it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from groundwork.retrieval.query import InterpretedQuery, code_pattern


@dataclass(frozen=True, slots=True)
class RerankCandidate:
    chunk_id: str
    text: str


@runtime_checkable
class Reranker(Protocol):
    """Returns candidate ids in a better order. It may return a subset or
    nothing; the kernel then falls back to fusion order for what is missing."""

    def rerank(
        self, query: InterpretedQuery, candidates: Sequence[RerankCandidate]
    ) -> list[str]: ...


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
