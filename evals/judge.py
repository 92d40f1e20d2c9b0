"""Answer-level judging: an answer composed from what `/v1/context` hands a
model, scored by ragas's LLM-judged faithfulness (is every claim of the answer
supported by the context?) and answer relevancy (does it answer the
question?), with a judge on an OpenAI-compatible chat endpoint.

This is groundedness (b), answer claims supported by the context, kept apart
from groundedness (a), the gold evidence inside the context
(`evals.grounding`): the two are never mixed into one number.

The judge speaks the chat-completions wire format through ragas's instructor
adapter in JSON mode (a reply is a JSON object in the message content), so
any compatible server works, including a loopback one in the tests. Answer
relevancy embeds questions with the tenant's own embedding model: nothing is
downloaded.
"""

from __future__ import annotations

import asyncio
import math
import os
import statistics
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from groundwork.ports import EmbeddingProvider

ANSWER_METRICS = ("faithfulness", "answer_relevancy")
NO_JUDGE = "no judge model: set GROUNDWORK_LLM_URL to an OpenAI-compatible endpoint"
#: question, the rendered (cited, fenced) context -> the composed answer
AnswerComposer = Callable[[str, str], str]


@dataclass(frozen=True, slots=True)
class JudgeEndpoint:
    url: str  # base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1
    model: str
    api_key: str = ""

    @property
    def label(self) -> str:
        return f"{self.model} at {self.url}"


def judge_from_env(env: dict[str, str] | None = None) -> JudgeEndpoint | None:
    """GROUNDWORK_JUDGE_URL/_MODEL/_API_KEY, each defaulting to the answering
    endpoint's GROUNDWORK_LLM_* (the same model may compose and judge)."""
    env = dict(os.environ) if env is None else env
    url = env.get("GROUNDWORK_JUDGE_URL") or env.get("GROUNDWORK_LLM_URL") or ""
    if not url:
        return None
    return JudgeEndpoint(
        url=url,
        model=env.get("GROUNDWORK_JUDGE_MODEL") or env.get("GROUNDWORK_LLM_MODEL") or "default",
        api_key=env.get("GROUNDWORK_JUDGE_API_KEY") or env.get("GROUNDWORK_LLM_API_KEY") or "",
    )


@dataclass(frozen=True, slots=True)
class AnswerSample:
    query_id: str
    query: str
    contexts: tuple[str, ...]  # the context entries as handed to the model (fenced)
    rendered_context: str


@dataclass(slots=True)
class JudgedAnswer:
    query_id: str
    answer: str | None = None
    faithfulness: float | None = None
    answer_relevancy: float | None = None
    error: str | None = None


@dataclass(slots=True)
class AnswerScores:
    samples: int = 0
    judge: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # metric -> why
    per_query: dict[str, JudgedAnswer] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def skipped_scores(why: str) -> AnswerScores:
    return AnswerScores(skipped=dict.fromkeys(ANSWER_METRICS, why))


def _ragas_embeddings(embedder: EmbeddingProvider) -> Any:
    from ragas.embeddings.base import BaseRagasEmbedding

    class TenantModelEmbeddings(BaseRagasEmbedding):
        """The tenant's own (offline) embedding model, for answer relevancy."""

        def embed_text(self, text: str, **kwargs: Any) -> list[float]:
            return list(embedder.embed_query(text))

        async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
            return self.embed_text(text)

    return TenantModelEmbeddings()


def judge_answers(
    samples: Sequence[AnswerSample],
    compose: AnswerComposer,
    judge: JudgeEndpoint,
    embedder: EmbeddingProvider,
) -> AnswerScores:
    """Compose an answer per sample, then judge it. A sample whose composition
    or judging fails is counted as an error with its reason, never as a score;
    a metric with no score at all is reported skipped with the first reason."""
    scores = AnswerScores(samples=len(samples), judge=judge.label)
    for sample in samples:
        judged = JudgedAnswer(sample.query_id)
        scores.per_query[sample.query_id] = judged
        if not sample.contexts:
            judged.error = "nothing retrieved: no context to answer from"
            continue
        try:
            judged.answer = compose(sample.query, sample.rendered_context).strip()
        except Exception as exc:  # an endpoint's failure is this sample's, reported
            judged.error = f"answer composition failed: {exc}"
        if judged.answer == "":
            judged.error = "the answering model returned an empty answer"
    answered = [s for s in samples if scores.per_query[s.query_id].answer]
    if answered:
        asyncio.run(_judge_all(answered, scores.per_query, judge, embedder))
    scores.errors = [f"{q}: {j.error}" for q, j in scores.per_query.items() if j.error is not None]
    for name in ANSWER_METRICS:
        values = [
            v
            for j in scores.per_query.values()
            if (v := getattr(j, name)) is not None and not math.isnan(v)
        ]
        if values:
            scores.metrics[name] = statistics.mean(values)
        else:
            scores.skipped[name] = (
                f"no answer could be judged ({scores.errors[0]})"
                if scores.errors
                else "no samples to judge"
            )
    return scores


async def _judge_all(
    samples: Sequence[AnswerSample],
    judged: dict[str, JudgedAnswer],
    judge: JudgeEndpoint,
    embedder: EmbeddingProvider,
) -> None:
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from openai import AsyncOpenAI
        from ragas.llms import llm_factory
        from ragas.metrics.collections import AnswerRelevancy, Faithfulness

    # a local judge needs no key, but the client insists on one
    client = AsyncOpenAI(base_url=judge.url, api_key=judge.api_key or "unused", max_retries=1)
    try:
        llm = llm_factory(judge.model, client=client, temperature=0.0)
        faithfulness = Faithfulness(llm=llm)
        relevancy = AnswerRelevancy(llm=llm, embeddings=_ragas_embeddings(embedder))
        for sample in samples:
            result = judged[sample.query_id]
            answer = result.answer or ""
            try:
                scored = await faithfulness.ascore(
                    user_input=sample.query,
                    response=answer,
                    retrieved_contexts=list(sample.contexts),
                )
                result.faithfulness = float(scored.value)
                relevant = await relevancy.ascore(user_input=sample.query, response=answer)
                result.answer_relevancy = float(relevant.value)
            except Exception as exc:  # a judge's failure is this sample's, reported
                result.error = f"judging failed: {type(exc).__name__}: {exc}"[:500]
    finally:
        await client.close()
