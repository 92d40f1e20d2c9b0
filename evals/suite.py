"""One eval run: relevance per mode, groundedness, citation correctness and
ragas's offline metrics for one tenant and embedding model, as a plain
record that is stored, compared over time and rendered into the report."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evals.beir import load_corpus, load_qrels, load_queries
from evals.evidence import scifact_evidence, squad_evidence
from evals.grounding import DocumentLoader, citation_correctness, groundedness
from evals.ragas_metrics import RagasSample, ragas_scores
from evals.retrieval import MODES, evaluate
from groundwork.eval_records import EvalResult, EvalSuite
from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import SearchEngines, SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found

Progress = Callable[[str, int, int], None]


def run_suite(
    engines: SearchEngines,
    tenant_id: str,
    model_key: str,
    suite: EvalSuite,
    load_document: DocumentLoader,
    progress: Progress | None = None,
    judge_url: str | None = None,
) -> EvalResult:
    started = time.monotonic()
    folder = Path(suite.beir_folder)
    scope = AccessScope(tenant_id, (f"tenant:{tenant_id}",))
    result = EvalResult(tenant_id, model_key, suite)
    documents = {
        d.doc_id: f"{d.title}\n\n{d.text}" for d in load_corpus(folder, limit=suite.limit_docs)
    }
    corpus_ids = set(documents)
    only = corpus_ids if suite.limit_docs is not None else None
    scores = evaluate(
        engines, tenant_id, folder, suite.split, MODES, suite.max_queries, progress, only
    )
    result.relevance = [asdict(s) for s in scores]
    queries = load_queries(folder)
    qrels = load_qrels(folder, suite.split)
    judged = [q for q in qrels if q in queries and (only is None or set(qrels[q]) & only)][
        : suite.max_queries
    ]

    if suite.sentences_folder:
        items = scifact_evidence(Path(suite.sentences_folder), corpus_ids)
        items = items[: suite.max_grounding_items]
        g = groundedness(engines, scope, items, "scifact-sentences", suite.budget_tokens)
        result.groundedness.append(_grounding_row(g))
    if suite.squad_file:
        items = squad_evidence(Path(suite.squad_file), suite.limit_docs)
        items = [i for i in items if i.doc_id in corpus_ids][: suite.max_grounding_items]
        g = groundedness(engines, scope, items, "squad", suite.budget_tokens)
        result.groundedness.append(_grounding_row(g))

    citation_queries = [queries[q] for q in judged[: suite.citation_queries]]
    c = citation_correctness(engines, scope, citation_queries, load_document)
    result.citations = {
        "checked": c.checked,
        "verified": c.verified,
        "rate": c.rate,
        "misses": c.misses,
    }

    samples: list[RagasSample] = []
    for query_id in judged[: suite.ragas_queries]:
        outcome = hybrid_search(scope, SearchRequest(queries[query_id], limit=10), engines)
        hits = outcome.hits if isinstance(outcome, Found) else ()
        gold = [d for d in qrels[query_id] if d in documents]
        samples.append(
            RagasSample(
                query=queries[query_id],
                retrieved_contexts=tuple(h.chunk.body for h in hits),
                retrieved_ids=tuple(h.chunk.filename.rsplit(".", 1)[0] for h in hits),
                reference_contexts=tuple(documents[d] for d in gold),
                reference_ids=tuple(gold),
            )
        )
    r = ragas_scores(samples, judge_url)
    result.ragas = {
        "samples": r.samples,
        "unscorable": r.unscorable,
        "metrics": r.metrics,
        "skipped": r.skipped,
    }
    result.seconds = time.monotonic() - started
    return result


def _grounding_row(g: Any) -> dict[str, Any]:
    return {
        "dataset": g.dataset,
        "items": g.items,
        "grounded": g.grounded,
        "rate": g.rate,
        "doc_in_hits_rate": g.doc_rate,
        "budget_tokens": g.budget_tokens,
        "seconds": round(g.seconds, 2),
    }
