"""Honest selection of the fusion constants: k-fold cross-validation.

Leg weights, the RRF constant and the candidate depth were once chosen on the
same queries they were scored on, and lost 0.029 nDCG@10 on queries the
tuning never saw. Here every constant is chosen on k-1 folds and scored on the
fold left out; the out-of-fold mean is the figure that predicts unseen queries,
printed beside the in-sample best (which does not).

The legs are run once per query (the engines' own work) and recorded; every
setting is then replayed over the recording through the kernel's own
functions (`vector_leg`, `rank_candidates`, `reranked_order`), so what is
scored here is what `hybrid_search` would return with those constants.

The relative floor is not tuned here: it only removes the weakest fused hits,
so it can lower nDCG@10 but never raise it; it is a precision guard for
context, kept at the shipped value.
"""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evals.golden import GoldenQuery
from evals.metrics import mrr_at_k, ndcg_at_k
from evals.retrieval import source_name
from groundwork.ports import AccessScope, ScoredChunk
from groundwork.retrieval.kernel import (
    FusionConstants,
    RetrievalPolicy,
    SearchEngines,
    first_scores,
    rank_candidates,
    reranked_order,
    vector_leg,
)
from groundwork.retrieval.outcome import ChunkView
from groundwork.retrieval.query import InterpretedQuery, interpret
from groundwork.retrieval.rerank import Reranker

MAX_DEPTH = 100
FOLDS = 5
KEYWORD_WEIGHTS = (0.25, 0.4, 0.5, 0.6, 0.75, 1.0, 1.25)
RRF_KS = (1, 2, 5, 10, 20, 40, 60, 100)
DEPTHS = (20, 50, 100)


@dataclass(frozen=True, slots=True)
class RecordedQuery:
    """One golden query's legs at full depth, and the re-checked chunks they name."""

    golden: GoldenQuery
    interpreted: InterpretedQuery
    vector: tuple[ScoredChunk, ...]
    keyword: tuple[ScoredChunk, ...]
    views: Mapping[str, ChunkView]

    def keyword_ids(self, depth: int) -> list[str]:
        """The keyword leg's first `depth` chunk ids, in its order."""
        return [hit.chunk_id for hit in self.keyword[:depth]]

    def leg_scores(self, depth: int) -> dict[str, dict[str, float]]:
        """Each leg's own scores of its first `depth` hits, as the kernel hands
        them to a reranker."""
        return {
            "vector": first_scores(self.vector[:depth]),
            "keyword": first_scores(self.keyword[:depth]),
        }


@dataclass(frozen=True, slots=True)
class FusionSetting:
    policy: RetrievalPolicy
    depth: int  # candidates taken from each leg

    @property
    def constants(self) -> FusionConstants:
        return FusionConstants(
            self.policy.rrf_k, dict(self.policy.leg_weights).get("keyword", 1.0), self.depth
        )

    @property
    def label(self) -> str:
        weights = dict(self.policy.leg_weights)
        return (
            f"keyword weight {weights.get('keyword', 1.0):.2f}, "
            f"k {self.policy.rrf_k}, depth {self.depth}"
        )


@dataclass(frozen=True, slots=True)
class CrossValidation:
    queries: int
    folds: int
    keyword_only: float
    vector_only: float
    plain_rrf: float  # equal weights, k 60, depth 100, no floor: the untuned baseline
    shipped: float  # the policy the kernel ships with, scored on these queries
    in_sample_best: float
    in_sample_setting: str
    in_sample_constants: FusionConstants  # the setting chosen on every query (what is adopted)
    out_of_fold: float  # each fold scored with the setting chosen on the others
    out_of_fold_rerank: float  # the same, with the reranker applied
    chosen: tuple[str, ...]  # the setting each fold chose (stability)

    @classmethod
    def from_summary(cls, data: Mapping[str, Any]) -> CrossValidation:
        """Back from a stored eval run's record (see `summary`)."""
        fields = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        fields["chosen"] = tuple(fields.get("chosen", ()))
        fields["in_sample_constants"] = FusionConstants.from_dict(data["in_sample_constants"])
        return cls(**fields)


def record_legs(
    engines: SearchEngines,
    tenant_id: str,
    golden: Sequence[GoldenQuery],
    depth: int = MAX_DEPTH,
    progress: Callable[[int, int], None] | None = None,
) -> list[RecordedQuery]:
    """Run both legs once per query, as a member of the tenant sees them."""
    scope = AccessScope(tenant_id, (f"tenant:{tenant_id}",))
    recorded: list[RecordedQuery] = []
    for n, item in enumerate(golden, start=1):
        interpreted = interpret(item.query)
        vector = engines.vectors.search(scope, engines.embedder.embed_query(item.query), depth)
        keyword = engines.keywords.search(scope, interpreted.keyword_text, depth)
        ids = list(dict.fromkeys(h.chunk_id for h in [*vector, *keyword]))
        views = engines.reader.load_chunks(scope, ids)
        recorded.append(RecordedQuery(item, interpreted, tuple(vector), tuple(keyword), views))
        if progress:
            progress(n, len(golden))
    return recorded


def ranked_names(
    recorded: RecordedQuery,
    setting: FusionSetting,
    semantic_floor: float,
    legs_used: Sequence[str] = ("vector", "keyword"),
    reranker: Reranker | None = None,
    depth: int = 10,
) -> list[str]:
    """The first `depth` sources (named as the golden set names them) of what the
    kernel would return with `setting`."""
    legs: dict[str, list[str]] = {}
    if "vector" in legs_used:
        legs["vector"] = vector_leg(recorded.vector[: setting.depth], semantic_floor)
    if "keyword" in legs_used:
        legs["keyword"] = recorded.keyword_ids(setting.depth)
    scored = rank_candidates(legs, recorded.views, setting.policy)
    order = (
        reranked_order(reranker, recorded.interpreted, scored, recorded.leg_scores(setting.depth))
        if reranker is not None and scored
        else [view.chunk_id for _, _, view in scored]
    )
    wanted = tuple(recorded.golden.sources)
    ranked: list[str] = []
    for chunk_id in order:
        name = source_name(recorded.views[chunk_id], wanted)
        if name not in ranked:
            ranked.append(name)
        if len(ranked) == depth:
            break
    return ranked


def score_query(
    recorded: RecordedQuery,
    setting: FusionSetting,
    semantic_floor: float,
    legs_used: Sequence[str] = ("vector", "keyword"),
    reranker: Reranker | None = None,
) -> float:
    """nDCG@10 over sources of what the kernel would return with `setting`."""
    ranked = ranked_names(recorded, setting, semantic_floor, legs_used, reranker)
    return ndcg_at_k(ranked, dict(recorded.golden.sources), 10)


def mrr_by_mode(
    recorded: Sequence[RecordedQuery],
    setting: FusionSetting,
    semantic_floor: float,
    reranker: Reranker | None,
) -> dict[str, float]:
    """MRR@10 per search mode with `setting` (the identifier check)."""
    modes: dict[str, tuple[tuple[str, ...], Reranker | None]] = {
        "keyword": (("keyword",), None),
        "vector": (("vector",), None),
        "hybrid": (("vector", "keyword"), None),
        "hybrid+rerank": (("vector", "keyword"), reranker),
    }
    return {
        mode: statistics.fmean(
            mrr_at_k(
                ranked_names(r, setting, semantic_floor, legs, rerank),
                dict(r.golden.sources),
                10,
            )
            for r in recorded
        )
        for mode, (legs, rerank) in modes.items()
    }


def grid(shipped: RetrievalPolicy) -> list[FusionSetting]:
    return [
        FusionSetting(
            replace(shipped, rrf_k=k, leg_weights=(("vector", 1.0), ("keyword", weight))),
            depth,
        )
        for weight in KEYWORD_WEIGHTS
        for k in RRF_KS
        for depth in DEPTHS
    ]


def folds_of(count: int, folds: int, seed: int = 0) -> list[list[int]]:
    order = list(range(count))
    random.Random(seed).shuffle(order)
    return [sorted(order[f::folds]) for f in range(folds)]


def cross_validate(
    recorded: Sequence[RecordedQuery],
    semantic_floor: float,
    shipped: RetrievalPolicy,
    reranker: Reranker | None = None,
    folds: int = FOLDS,
    progress: Callable[[int, int], None] | None = None,
) -> CrossValidation:
    if len(recorded) < folds:
        raise ValueError(f"{len(recorded)} queries cannot be split into {folds} folds")
    settings = grid(shipped)
    per_setting: list[list[float]] = []
    for n, setting in enumerate(settings, start=1):
        per_setting.append([score_query(r, setting, semantic_floor) for r in recorded])
        if progress:
            progress(n, len(settings))

    def mean_over(scores: Sequence[float], indices: Sequence[int]) -> float:
        return statistics.fmean(scores[i] for i in indices)

    everything = list(range(len(recorded)))
    out_of_fold = [0.0] * len(recorded)
    out_of_fold_rerank = [0.0] * len(recorded)
    chosen: list[str] = []
    for held_out in folds_of(len(recorded), folds):
        held = set(held_out)
        training = [i for i in everything if i not in held]
        # ties go to the earlier setting in the grid (fewer, smaller constants first)
        best = max(range(len(settings)), key=lambda s: (mean_over(per_setting[s], training), -s))
        chosen.append(settings[best].label)
        for i in held_out:
            out_of_fold[i] = per_setting[best][i]
            out_of_fold_rerank[i] = (
                score_query(recorded[i], settings[best], semantic_floor, reranker=reranker)
                if reranker is not None
                else per_setting[best][i]
            )
    means = [statistics.fmean(scores) for scores in per_setting]
    best_in_sample = max(range(len(settings)), key=lambda s: (means[s], -s))
    plain = FusionSetting(
        RetrievalPolicy(
            rrf_k=60,
            leg_weights=(("vector", 1.0), ("keyword", 1.0)),
            relative_floor=0.0,
            low_confidence_weight=1.0,
        ),
        MAX_DEPTH,
    )
    shipped_setting = FusionSetting(shipped, MAX_DEPTH)  # as `groundwork eval` searches

    def overall(setting: FusionSetting, legs: Sequence[str] = ("vector", "keyword")) -> float:
        return statistics.fmean(score_query(r, setting, semantic_floor, legs) for r in recorded)

    return CrossValidation(
        queries=len(recorded),
        folds=folds,
        keyword_only=overall(shipped_setting, ("keyword",)),
        vector_only=overall(shipped_setting, ("vector",)),
        plain_rrf=overall(plain),
        shipped=overall(shipped_setting),
        in_sample_best=means[best_in_sample],
        in_sample_setting=settings[best_in_sample].label,
        in_sample_constants=settings[best_in_sample].constants,
        out_of_fold=statistics.fmean(out_of_fold),
        out_of_fold_rerank=statistics.fmean(out_of_fold_rerank),
        chosen=tuple(chosen),
    )


#: tuning must beat the defaults out of fold by more than this to be adopted
ADOPTION_MARGIN = 0.002


def constants_to_adopt(cross_validation: Mapping[str, Any]) -> FusionConstants | None:
    """The tenant's own constants, when tuning wins out of fold: the tuning
    procedure's out-of-fold nDCG@10 above the defaults' on the same queries by
    more than the margin. Then the setting chosen on every query is adopted;
    otherwise None (the defaults; an earlier adoption is withdrawn)."""
    if "out_of_fold" not in cross_validation:
        return None
    gain = float(cross_validation["out_of_fold"]) - float(cross_validation["shipped"])
    if gain <= ADOPTION_MARGIN:
        return None
    return FusionConstants.from_dict(cross_validation["in_sample_constants"])


@dataclass(frozen=True, slots=True)
class FusionDecision:
    """What an eval run does to the tenant's constants."""

    applies: bool  # False: the tenant's constants stay as they are
    constants: FusionConstants | None  # when it applies: its own, or None for the defaults
    reason: str


def fusion_decision(
    cross_validation: Mapping[str, Any], model_key: str, serving_model: str
) -> FusionDecision:
    """Only a run of the serving model decides: constants tuned on a candidate
    model's rankings say nothing about the model the tenant searches with."""
    if "out_of_fold" not in cross_validation:
        return FusionDecision(False, None, "no cross-validation in this run")
    if model_key != serving_model:
        return FusionDecision(
            False, None, f"not adopted: {model_key} is not the serving model ({serving_model})"
        )
    adopted = constants_to_adopt(cross_validation)
    if adopted is None:
        return FusionDecision(True, None, "defaults (tuning did not win out of fold)")
    stamped = replace(adopted, model_key=model_key)
    return FusionDecision(True, stamped, json.dumps(stamped.to_dict()))


def format_cross_validation(model_key: str, result: CrossValidation) -> str:
    lines = [
        f"cross-validated fusion, model {model_key}: {result.queries} queries, "
        f"{result.folds} folds (nDCG@10)",
        f"  keyword leg alone            {result.keyword_only:.3f}",
        f"  vector leg alone             {result.vector_only:.3f}",
        f"  plain RRF (untuned)          {result.plain_rrf:.3f}",
        f"  default constants            {result.shipped:.3f}",
        f"  best in sample               {result.in_sample_best:.3f}   ({result.in_sample_setting})",
        f"  out of fold                  {result.out_of_fold:.3f}   <- predicts unseen queries",
        f"  out of fold + reranker       {result.out_of_fold_rerank:.3f}",
        "  chosen per fold: " + "; ".join(result.chosen),
    ]
    return "\n".join(lines)


def summary(result: CrossValidation) -> Mapping[str, Any]:
    """For stored eval runs and Dagster metadata."""
    return {
        "queries": result.queries,
        "folds": result.folds,
        "keyword_only": round(result.keyword_only, 4),
        "vector_only": round(result.vector_only, 4),
        "plain_rrf": round(result.plain_rrf, 4),
        "shipped": round(result.shipped, 4),
        "in_sample_best": round(result.in_sample_best, 4),
        "in_sample_setting": result.in_sample_setting,
        "in_sample_constants": result.in_sample_constants.to_dict(),
        "out_of_fold": round(result.out_of_fold, 4),
        "out_of_fold_rerank": round(result.out_of_fold_rerank, 4),
        "chosen": list(result.chosen),
    }
