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

from groundwork.retrieval.query import InterpretedQuery


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
    """Promotes candidates that contain the query's identifier-shaped terms
    (ERR-4021, Q3-2026) as whole tokens; a stable sort keeps fusion order
    among equals. Without identifiers in the query it changes nothing."""

    def rerank(self, query: InterpretedQuery, candidates: Sequence[RerankCandidate]) -> list[str]:
        if not query.identifiers:
            return [c.chunk_id for c in candidates]
        patterns = [
            re.compile(rf"(?<![\w-]){re.escape(term)}(?![\w-])", re.IGNORECASE)
            for term in query.identifiers
        ]

        def matched(candidate: RerankCandidate) -> int:
            return sum(1 for p in patterns if p.search(candidate.text))

        ranked = sorted(enumerate(candidates), key=lambda item: (-matched(item[1]), item[0]))
        return [c.chunk_id for _, c in ranked]
