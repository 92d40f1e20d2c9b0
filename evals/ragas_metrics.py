"""ragas's offline metrics: non-LLM context recall and precision (string
similarity against the gold passages) and ID-based context precision and
recall. LLM-judged metrics (faithfulness, answer relevancy) need a judge
model; without an OpenAI-compatible endpoint they are reported as skipped,
with the reason, never silently left out.

ragas posts usage analytics unless RAGAS_DO_NOT_TRACK is set; it is set here
before ragas is imported.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class RagasSample:
    query: str
    retrieved_contexts: tuple[str, ...]
    retrieved_ids: tuple[str, ...]
    reference_contexts: tuple[str, ...]
    reference_ids: tuple[str, ...]


@dataclass(slots=True)
class RagasScores:
    samples: int = 0
    unscorable: int = 0  # no gold passage in the tenant
    metrics: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # metric -> why


NON_LLM = (
    "non_llm_context_recall",
    "non_llm_context_precision_with_reference",
    "id_based_context_precision",
    "id_based_context_recall",
)
LLM_JUDGED = ("faithfulness", "answer_relevancy")


def ragas_scores(samples: Sequence[RagasSample], judge_url: str | None = None) -> RagasScores:
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas import SingleTurnSample
        from ragas.metrics import (
            IDBasedContextPrecision,
            IDBasedContextRecall,
            NonLLMContextPrecisionWithReference,
            NonLLMContextRecall,
        )

    metrics = {
        "non_llm_context_recall": NonLLMContextRecall(),
        "non_llm_context_precision_with_reference": NonLLMContextPrecisionWithReference(),
        "id_based_context_precision": IDBasedContextPrecision(),
        "id_based_context_recall": IDBasedContextRecall(),
    }
    # A sample without gold passages cannot be scored (the subset ingested may not
    # hold them); one that retrieved nothing scores 0 (ragas raises on both).
    unscorable = sum(1 for s in samples if not s.reference_ids)
    empty = sum(1 for s in samples if s.reference_ids and not s.retrieved_ids)
    scorable = [s for s in samples if s.reference_ids and s.retrieved_ids]
    converted = [
        SingleTurnSample(
            user_input=s.query,
            retrieved_contexts=list(s.retrieved_contexts),
            reference_contexts=list(s.reference_contexts),
            retrieved_context_ids=list(s.retrieved_ids),
            reference_context_ids=list(s.reference_ids),
        )
        for s in scorable
    ]

    async def score_all() -> dict[str, list[float]]:
        values: dict[str, list[float]] = {name: [] for name in metrics}
        for sample in converted:
            for name, metric in metrics.items():
                values[name].append(float(await metric.single_turn_ascore(sample)))
        return values

    values = asyncio.run(score_all()) if converted else {name: [] for name in metrics}
    result = RagasScores(samples=len(converted) + empty, unscorable=unscorable)
    for name, scores in values.items():
        clean = [v for v in scores if v == v] + [0.0] * empty  # NaN dropped
        result.metrics[name] = statistics.mean(clean) if clean else 0.0
    for name in LLM_JUDGED:
        result.skipped[name] = (
            "no judge model: set GROUNDWORK_LLM_URL to an OpenAI-compatible endpoint"
            if judge_url is None
            else "LLM-judged metrics are not wired to the configured endpoint yet"
        )
    return result
