"""Groundedness and citation correctness, measured on what the API would
hand a model: the hybrid + reranker hits, budgeted by the same context
selection `/v1/context` uses (sections expanded, per-source cap)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from evals.evidence import EvidenceItem
from groundwork.citation_check import CitationMiss, verify_citation
from groundwork.documents import ExtractedDocument
from groundwork.ports import AccessScope
from groundwork.retrieval.context import select_context
from groundwork.retrieval.kernel import SearchEngines, SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found, Hit

_WORD = re.compile(r"\w+", re.UNICODE)
DocumentLoader = Callable[[str], ExtractedDocument | None]  # version id -> its extraction


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _inside(needle: str, haystack_words: list[str]) -> bool:
    words = _words(needle)
    if not words:
        return False
    return " ".join(words) in " ".join(haystack_words)


@dataclass(slots=True)
class GroundednessScore:
    dataset: str
    items: int = 0
    grounded: int = 0  # gold evidence inside the budgeted context
    retrieved_doc: int = 0  # the evidence's document among the hits at all
    budget_tokens: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.grounded / self.items if self.items else 0.0

    @property
    def doc_rate(self) -> float:
        return self.retrieved_doc / self.items if self.items else 0.0


@dataclass(slots=True)
class CitationScore:
    checked: int = 0
    verified: int = 0
    misses: list[dict[str, str]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.verified / self.checked if self.checked else 0.0


def _doc_of(hit: Hit) -> str:
    return hit.chunk.filename.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def groundedness(
    engines: SearchEngines,
    scope: AccessScope,
    items: Sequence[EvidenceItem],
    dataset: str,
    budget_tokens: int = 2000,
    per_source_cap: int = 3,
) -> GroundednessScore:
    score = GroundednessScore(dataset, budget_tokens=budget_tokens)
    started = time.monotonic()
    for item in items:
        outcome = hybrid_search(scope, SearchRequest(item.query, limit=30, candidates=100), engines)
        score.items += 1
        if not isinstance(outcome, Found):
            continue
        if any(_doc_of(h) == item.doc_id for h in outcome.hits):
            score.retrieved_doc += 1
        selection = select_context(
            outcome.hits,
            budget_tokens=budget_tokens,
            count_tokens=engines.embedder.count_tokens,
            per_source_cap=per_source_cap,
            load_section=lambda view: engines.reader.section(scope, view.chunk_id),
        )
        context = "\n\n".join(c.body for entry in selection.items for c in entry.chunks)
        context_words = _words(context)
        if any(_inside(e, context_words) for e in item.evidence):
            score.grounded += 1
    score.seconds = time.monotonic() - started
    return score


def citation_correctness(
    engines: SearchEngines,
    scope: AccessScope,
    queries: Sequence[str],
    load_document: DocumentLoader,
    per_query: int = 10,
    max_listed_misses: int = 50,
) -> CitationScore:
    """Every citation of the top hits, checked against the stored extraction of
    the exact version it names."""
    score = CitationScore()
    documents: dict[str, ExtractedDocument | None] = {}
    for query in queries:
        outcome = hybrid_search(scope, SearchRequest(query, limit=per_query), engines)
        if not isinstance(outcome, Found):
            continue
        for hit in outcome.hits:
            version = hit.citation.source_version_id
            if version not in documents:
                documents[version] = load_document(version)
            check = verify_citation(hit.citation, documents[version])
            score.checked += 1
            if isinstance(check, CitationMiss):
                if len(score.misses) < max_listed_misses:
                    score.misses.append(
                        {
                            "chunk_id": hit.citation.chunk_id,
                            "version_id": version,
                            "location": hit.citation.location.label(),
                            "reason": check.reason,
                        }
                    )
            else:
                score.verified += 1
    return score
