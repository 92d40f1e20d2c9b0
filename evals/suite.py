"""One eval run: relevance per mode, groundedness, citation correctness,
ragas's offline metrics and, with a judge, answer-level scores for one tenant
and embedding model, as a plain record that is stored, compared over time and
rendered into the report, plus every query's outcome for the drill-down.

Whatever the suite names (a tenant's own golden set, a BEIR folder, a SQuAD
file), it is scored as a golden set.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evals.evidence import beir_golden, squad_golden
from evals.fusion_cv import cross_validate, record_legs
from evals.fusion_cv import summary as fusion_summary
from evals.golden import GoldenQuery, load_golden
from evals.grounding import ContextBuilder, DocumentLoader, citation_correctness, groundedness
from evals.judge import (
    NO_JUDGE,
    AnswerComposer,
    AnswerSample,
    AnswerScores,
    JudgeEndpoint,
    judge_answers,
    skipped_scores,
)
from evals.ragas_metrics import RagasSample, ragas_scores
from evals.retrieval import MODES, QueryOutcome, evaluate_golden, source_name
from groundwork.eval_records import EvalResult, EvalSuite
from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import SearchEngines, SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found

__all__ = ["EvalResult", "EvalSuite", "SuiteRun", "run_suite", "suite_golden", "suite_missing"]

Progress = Callable[[str, int, int], None]
#: below this, five folds of a golden set are too small to choose anything on
MIN_CROSS_VALIDATION_QUERIES = 50


@dataclass(slots=True)
class SuiteRun:
    result: EvalResult
    outcomes: list[QueryOutcome] = field(default_factory=list)
    grounded: dict[str, bool] = field(default_factory=dict)  # query id -> evidence in context
    answers: AnswerScores = field(default_factory=AnswerScores)


def suite_missing(suite: EvalSuite) -> str | None:
    """Why the suite cannot run on this machine, or None."""
    if suite.golden_file:
        return (
            None
            if os.path.isfile(suite.golden_file)
            else f"the golden set {suite.golden_file} is not on this machine"
        )
    if suite.squad_file:
        return (
            None
            if os.path.isfile(suite.squad_file)
            else f"the SQuAD file {suite.squad_file} is not on this machine"
        )
    if not suite.beir_folder or not os.path.isdir(suite.beir_folder):
        return f"the suite's folder {suite.beir_folder or '(none)'} is not on this machine"
    return None


def suite_golden(suite: EvalSuite) -> tuple[list[GoldenQuery], str]:
    """The suite's golden set and the name its groundedness is reported under."""
    if suite.golden_file:
        return load_golden(Path(suite.golden_file)), "golden"
    if suite.squad_file:
        return squad_golden(Path(suite.squad_file), suite.limit_docs), "squad"
    sentences = Path(suite.sentences_folder) if suite.sentences_folder else None
    golden = beir_golden(Path(suite.beir_folder), suite.split, sentences, suite.limit_docs)
    return golden, "scifact-sentences"


def cross_validated(
    engines: SearchEngines, tenant_id: str, golden: Sequence[GoldenQuery]
) -> dict[str, Any]:
    """The fusion constants' out-of-fold figure beside the in-sample one; a set
    too small to split says so (a skipped measure is never reported as a score)."""
    if len(golden) < MIN_CROSS_VALIDATION_QUERIES:
        return {
            "skipped": f"{len(golden)} queries; cross-validation needs at least "
            f"{MIN_CROSS_VALIDATION_QUERIES}"
        }
    recorded = record_legs(engines, tenant_id, golden)
    found = cross_validate(
        recorded, engines.vectors.model.semantic_floor, engines.policy, engines.reranker
    )
    return dict(fusion_summary(found))


def run_suite(
    engines: SearchEngines,
    tenant_id: str,
    model_key: str,
    suite: EvalSuite,
    load_document: DocumentLoader,
    progress: Progress | None = None,
    compose: AnswerComposer | None = None,
    judge: JudgeEndpoint | None = None,
) -> SuiteRun:
    started = time.monotonic()
    scope = AccessScope(tenant_id, (f"tenant:{tenant_id}",))
    result = EvalResult(tenant_id, model_key, suite)
    golden, dataset = suite_golden(suite)
    golden = golden[: suite.max_queries]
    scores, outcomes = evaluate_golden(engines, tenant_id, golden, MODES, progress)
    result.relevance = [asdict(s) for s in scores]
    result.cross_validation = cross_validated(engines, tenant_id, golden)
    run = SuiteRun(result, outcomes)

    contexts = ContextBuilder(engines, scope, suite.budget_tokens)
    if any(item.evidence for item in golden):
        g, run.grounded = groundedness(contexts, golden, dataset, suite.max_grounding_items)
        result.groundedness.append(_grounding_row(g))
        # the same measure on the context a summary-first search builds, and a
        # routed one (layer auto), beside it
        for layer in ("summary_first", "auto"):
            layered = ContextBuilder(engines, scope, suite.budget_tokens, layer=layer)
            g, _ = groundedness(layered, golden, dataset, suite.max_grounding_items)
            result.groundedness.append(_grounding_row(g))

    citation_queries = [item.query for item in golden[: suite.citation_queries]]
    c = citation_correctness(engines, scope, citation_queries, load_document)
    result.citations = {
        "checked": c.checked,
        "verified": c.verified,
        "rate": c.rate,
        "misses": c.misses,
    }

    samples: list[RagasSample] = []
    for item in golden[: suite.ragas_queries]:
        outcome = hybrid_search(scope, SearchRequest(item.query, limit=10), engines)
        hits = outcome.hits if isinstance(outcome, Found) else ()
        gold = item.reference_ids
        samples.append(
            RagasSample(
                query=item.query,
                retrieved_contexts=tuple(h.chunk.body for h in hits),
                retrieved_ids=tuple(source_name(h.chunk, gold) for h in hits),
                reference_contexts=tuple(text for _, text in item.passages),
                reference_ids=gold,
            )
        )
    r = ragas_scores(samples)
    result.ragas = {
        "samples": r.samples,
        "unscorable": r.unscorable,
        "metrics": r.metrics,
        "skipped": r.skipped,
    }

    run.answers = _answers(golden[: suite.judge_queries], contexts, compose, judge, engines)
    result.answers = {
        "samples": run.answers.samples,
        "judge": run.answers.judge,
        "metrics": run.answers.metrics,
        "skipped": run.answers.skipped,
        "errors": run.answers.errors[:20],
    }
    result.seconds = time.monotonic() - started
    return run


def _answers(
    golden: Sequence[GoldenQuery],
    contexts: ContextBuilder,
    compose: AnswerComposer | None,
    judge: JudgeEndpoint | None,
    engines: SearchEngines,
) -> AnswerScores:
    if compose is None or judge is None:
        return skipped_scores(NO_JUDGE)
    samples = []
    for item in golden:
        context = contexts(item.query)
        samples.append(
            AnswerSample(
                item.query_id,
                item.query,
                context.entries,
                context.rendered,
            )
        )
    return judge_answers(samples, compose, judge, engines.embedder)


def _grounding_row(g: Any) -> dict[str, Any]:
    return {
        "dataset": g.dataset,
        "layer": g.layer,
        "items": g.items,
        "grounded": g.grounded,
        "rate": g.rate,
        "doc_in_hits_rate": g.doc_rate,
        "budget_tokens": g.budget_tokens,
        "seconds": round(g.seconds, 2),
    }
