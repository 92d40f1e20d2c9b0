"""ragas's offline metrics: non-LLM context recall and precision (string
similarity against the expected passages) and ID-based context precision and
recall (against the expected sources). A golden set without expected passages
has the string metrics reported as skipped, with the reason. The LLM-judged
metrics (faithfulness, answer relevancy) are `evals.judge`'s.

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


def ragas_scores(samples: Sequence[RagasSample]) -> RagasScores:
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

    id_based = {
        "id_based_context_precision": IDBasedContextPrecision(),
        "id_based_context_recall": IDBasedContextRecall(),
    }
    string_based = {
        "non_llm_context_recall": NonLLMContextRecall(),
        "non_llm_context_precision_with_reference": NonLLMContextPrecisionWithReference(),
    }
    # A sample without gold sources cannot be scored (the subset ingested may not
    # hold them); one that retrieved nothing scores 0 (ragas raises on both).
    unscorable = sum(1 for s in samples if not s.reference_ids)
    empty = [s for s in samples if s.reference_ids and not s.retrieved_ids]
    scorable = [s for s in samples if s.reference_ids and s.retrieved_ids]
    converted = [
        (
            s,
            SingleTurnSample(
                user_input=s.query,
                retrieved_contexts=list(s.retrieved_contexts),
                reference_contexts=list(s.reference_contexts),
                retrieved_context_ids=list(s.retrieved_ids),
                reference_context_ids=list(s.reference_ids),
            ),
        )
        for s in scorable
    ]
    with_passages = any(s.reference_contexts for s in scorable + empty)

    async def score_all() -> dict[str, list[float]]:
        values: dict[str, list[float]] = {name: [] for name in (*string_based, *id_based)}
        for source, sample in converted:
            for name, metric in id_based.items():
                values[name].append(float(await metric.single_turn_ascore(sample)))
            if not source.reference_contexts:
                continue
            for name, metric in string_based.items():
                values[name].append(float(await metric.single_turn_ascore(sample)))
        return values

    values = asyncio.run(score_all()) if converted else {}
    result = RagasScores(samples=len(converted) + len(empty), unscorable=unscorable)
    for name in NON_LLM:
        if name in string_based and not with_passages:
            result.skipped[name] = "the golden set gives no expected passages to compare with"
            continue
        zeros = [0.0 for s in empty if name in id_based or s.reference_contexts]
        clean = [v for v in values.get(name, []) if v == v] + zeros  # NaN dropped
        result.metrics[name] = statistics.mean(clean) if clean else 0.0
    return result
