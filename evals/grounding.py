"""Groundedness and citation correctness, measured on what the API would
hand a model: the hybrid + reranker hits, budgeted by the same context
selection `/v1/context` uses (sections expanded, per-source cap)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from evals.golden import GoldenQuery
from evals.retrieval import source_name
from groundwork.citation_check import CitationMiss, verify_citation
from groundwork.documents import ExtractedDocument
from groundwork.ports import AccessScope
from groundwork.retrieval.context import (
    ContextSelection,
    render_context,
    render_context_entry,
    select_context,
)
from groundwork.retrieval.kernel import SearchEngines, SearchRequest, hybrid_search
from groundwork.retrieval.layers import layered_search
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
    layer: str = "raw"  # the search the context came from (raw, or summary_first)
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


@dataclass(frozen=True, slots=True)
class QueryContext:
    """What `/v1/context` would hand a model for one query."""

    hits: tuple[Hit, ...]
    selection: ContextSelection | None  # None when the search found nothing
    words: tuple[str, ...]  # the selected text's words, for evidence matching
    rendered: str  # with citation markers, fenced as untrusted (the /v1/context text)

    @property
    def entries(self) -> tuple[str, ...]:
        """Each selected item as the model sees it: marker, citation, fenced text."""
        if self.selection is None:
            return ()
        return tuple(
            render_context_entry(n, item.hit, item.chunks)
            for n, item in enumerate(self.selection.items, start=1)
        )


class ContextBuilder:
    """Builds each query's context once (groundedness and the judge share it)."""

    def __init__(
        self,
        engines: SearchEngines,
        scope: AccessScope,
        budget_tokens: int = 2000,
        per_source_cap: int = 3,
        layer: str = "raw",
    ) -> None:
        self.layer = layer  # "summary_first": the context of a summary-first search
        self.engines = engines
        self.scope = scope
        self.budget_tokens = budget_tokens
        self.per_source_cap = per_source_cap
        self._built: dict[str, QueryContext] = {}

    def __call__(self, query: str) -> QueryContext:
        if query not in self._built:
            self._built[query] = self._build(query)
        return self._built[query]

    def _build(self, query: str) -> QueryContext:
        engines, scope = self.engines, self.scope
        outcome = layered_search(
            scope, SearchRequest(query, limit=30, candidates=100), engines, self.layer
        )
        if not isinstance(outcome, Found):
            return QueryContext((), None, (), "")
        selection = select_context(
            outcome.hits,
            budget_tokens=self.budget_tokens,
            count_tokens=engines.embedder.count_tokens,
            per_source_cap=self.per_source_cap,
            load_section=lambda view: engines.reader.section(scope, view.chunk_id),
        )
        context = "\n\n".join(c.body for entry in selection.items for c in entry.chunks)
        return QueryContext(
            outcome.hits, selection, tuple(_words(context)), render_context(selection)
        )


def groundedness(
    contexts: ContextBuilder,
    golden: Sequence[GoldenQuery],
    dataset: str,
    max_items: int | None = None,
) -> tuple[GroundednessScore, dict[str, bool]]:
    """One item per evidence group (a query's spans, or its spans in one source);
    an item is grounded when any of its spans is inside the query's context.
    Also, per query: whether every one of its items was grounded."""
    score = GroundednessScore(dataset, contexts.layer, budget_tokens=contexts.budget_tokens)
    per_query: dict[str, bool] = {}
    started = time.monotonic()
    for item in golden:
        if max_items is not None and score.items >= max_items:
            break
        if not item.evidence:
            continue
        context = contexts(item.query)
        words = list(context.words)
        grounded_all = True
        for ref, spans in item.evidence:
            if max_items is not None and score.items >= max_items:
                break
            score.items += 1
            wanted = (ref,) if ref else item.relevant
            if any(source_name(h.chunk, wanted) in wanted for h in context.hits):
                score.retrieved_doc += 1
            if any(_inside(span, words) for span in spans):
                score.grounded += 1
            else:
                grounded_all = False
        per_query[item.query_id] = grounded_all
    score.seconds = time.monotonic() - started
    return score, per_query


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
