"""A reranker of our own that runs offline: a linear learning-to-rank model
over what the legs already returned (issue #36).

No cross-encoder ships inside a registry package that works offline here, so
the reranker learns from the features fusion already has for free: each leg's
rank and own score (cosine, BM25 as a share of the query's best), the fused
position and score, how much of the query the chunk's text and
title cover, code matches, and how many of the source's chunks were hit. The
model is a weight per standardized feature, trained with a pairwise logistic
loss (relevant above non-relevant within one query's candidates) by L-BFGS
from zero: no randomness, so the same rows give the same bytes
(`bench/train_reranker.py` writes the shipped JSON from the train splits).

Identifier queries are the identifier reranker's: a query naming a code is
handed to it whole, so its guarantees (a lookup's matches first, the bounded
lift) hold unchanged with this reranker on.

Pure: numpy and scipy only, no engines; the adapter reads its weights from a
file the caller names or the one shipped beside this module.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from groundwork.errors import CapabilityUnavailable
from groundwork.retrieval.query import STOPWORDS, InterpretedQuery, code_pattern
from groundwork.retrieval.rerank import IdentifierReranker, RerankCandidate

#: the model shipped with the code (derived weights only, no data)
SHIPPED_MODEL = Path(__file__).resolve().parent / "models" / "learned_rank.json"
#: only the head of the fused list is rescored: below it fusion order stands
RERANK_DEPTH = 30
#: a leg's rank when the candidate is absent from that leg
ABSENT_RANK = 101

FEATURES = (
    "fused_reciprocal",
    "fused_log_position",
    "fused_score_ratio",
    "vector_reciprocal",
    "vector_log_rank",
    "keyword_reciprocal",
    "keyword_log_rank",
    "both_legs",
    "term_coverage",
    "prefix_coverage",
    "bigram_coverage",
    "title_coverage",
    "code_match",
    "log_length",
    "source_hits",
    "source_first",
    "source_best_reciprocal",
    "vector_score",
    "vector_score_gap",
    "keyword_score_ratio",
)

_WORD = re.compile(r"\w+", re.UNICODE)
_PREFIX = 5


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def query_terms(query: InterpretedQuery) -> list[str]:
    """Content words of the query in order (stopwords off, repeats kept once)."""
    return list(dict.fromkeys(w for w in _words(query.text) if w not in STOPWORDS))


def _coverage(terms: Sequence[str], present: set[str]) -> float:
    return sum(1 for t in terms if t in present) / len(terms) if terms else 0.0


def _rank_features(rank: int | None) -> tuple[float, float]:
    if rank is None:
        return 0.0, math.log(ABSENT_RANK)
    return 1.0 / rank, math.log(rank)


def features(query: InterpretedQuery, candidates: Sequence[RerankCandidate]) -> NDArray[np.float64]:
    """One row per candidate (in fusion order), columns as `FEATURES`. Depends
    only on the query and the list, so training offline over recorded legs and
    serving online compute the same numbers."""
    terms = query_terms(query)
    prefixes = [t[:_PREFIX] for t in terms]
    bigrams = list(zip(terms, terms[1:], strict=False))
    code_patterns = [re.compile(code_pattern(c), re.I) for c in query.codes]
    top_score = max((c.fused_score for c in candidates), default=0.0)
    per_source = Counter(c.source_id for c in candidates)
    best_position: dict[str, int] = {}
    for position, c in enumerate(candidates):
        best_position.setdefault(c.source_id, position)
    # the legs' own scores: a cosine is comparable across queries, a BM25 score
    # only within one (so as a share of the query's best); a candidate one leg
    # did not return gets that leg's lowest (cosine) or nothing (BM25)
    scores = [dict(c.leg_scores) for c in candidates]
    cosines = [s["vector"] for s in scores if "vector" in s]
    top_cosine, low_cosine = (max(cosines), min(cosines)) if cosines else (0.0, 0.0)
    top_bm25 = max((s["keyword"] for s in scores if "keyword" in s), default=0.0)
    rows = np.zeros((len(candidates), len(FEATURES)), dtype=np.float64)
    for position, c in enumerate(candidates):
        words = _words(c.text)
        present = set(words)
        ranks = dict(c.leg_ranks)
        vector = _rank_features(ranks.get("vector"))
        keyword = _rank_features(ranks.get("keyword"))
        text_bigrams = set(zip(words, words[1:], strict=False))
        title = set(_words(" ".join(c.heading_path)))
        rows[position] = (
            1.0 / (1 + position),
            math.log1p(position),
            c.fused_score / top_score if top_score > 0 else 0.0,
            vector[0],
            vector[1],
            keyword[0],
            keyword[1],
            1.0 if "vector" in ranks and "keyword" in ranks else 0.0,
            _coverage(terms, present),
            _coverage(prefixes, {w[:_PREFIX] for w in words}),
            (sum(1 for b in bigrams if b in text_bigrams) / len(bigrams) if bigrams else 0.0),
            _coverage(terms, title),
            (
                sum(1 for p in code_patterns if p.search(c.text)) / len(code_patterns)
                if code_patterns
                else 0.0
            ),
            math.log1p(len(words)),
            math.log(per_source[c.source_id]),
            1.0 if best_position[c.source_id] == position else 0.0,
            1.0 / (1 + best_position[c.source_id]),
            scores[position].get("vector", low_cosine),
            top_cosine - scores[position].get("vector", low_cosine),
            scores[position].get("keyword", 0.0) / top_bm25 if top_bm25 > 0 else 0.0,
        )
    return rows


@dataclass(frozen=True, slots=True)
class LinearRankModel:
    """score = sum of weight * (feature - mean) / scale, higher first."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    depth: int = RERANK_DEPTH
    trained_on: str = ""

    def score(self, rows: NDArray[np.float64]) -> NDArray[np.float64]:
        standardized = (rows - np.asarray(self.mean)) / np.asarray(self.scale)
        result: NDArray[np.float64] = standardized @ np.asarray(self.weights)
        return result

    def to_json(self) -> str:
        """Stable bytes: sorted keys, floats as written by `_rounded`."""
        return (
            json.dumps(
                {
                    "kind": "linear-pairwise",
                    "features": list(self.features),
                    "mean": list(self.mean),
                    "scale": list(self.scale),
                    "weights": list(self.weights),
                    "depth": self.depth,
                    "trained_on": self.trained_on,
                },
                indent=1,
                sort_keys=True,
            )
            + "\n"
        )

    @classmethod
    def from_json(cls, text: str) -> LinearRankModel:
        data = json.loads(text)
        if data.get("kind") != "linear-pairwise":
            raise ValueError(f"not a linear pairwise rank model: {data.get('kind')!r}")
        names = tuple(data["features"])
        if names != FEATURES:
            raise ValueError(f"model features {names} are not this code's {FEATURES}")
        return cls(
            names,
            tuple(float(v) for v in data["mean"]),
            tuple(float(v) for v in data["scale"]),
            tuple(float(v) for v in data["weights"]),
            int(data["depth"]),
            str(data.get("trained_on", "")),
        )

    @classmethod
    def load(cls, path: Path = SHIPPED_MODEL) -> LinearRankModel:
        """The model at `path`; a missing file says which command writes it
        (GROUNDWORK_RERANKER=learned then fails at start, never mid-search)."""
        if not path.is_file():
            raise CapabilityUnavailable(
                f"no learned rank model at {path}: bench/train_reranker.py trains it "
                "from the train splits (issue #36)"
            )
        return cls.from_json(path.read_text(encoding="utf-8"))


def _rounded(values: NDArray[np.float64]) -> tuple[float, ...]:
    # 8 significant digits: the JSON is the same bytes on every machine even
    # where the last bits of a BLAS sum differ
    return tuple(float(f"{v:.8g}") for v in values)


@dataclass(frozen=True, slots=True)
class TrainingQuery:
    """One query's candidate rows (fusion order) and each one's graded relevance."""

    rows: NDArray[np.float64]
    relevance: NDArray[np.float64]


def _pair_differences(
    queries: Sequence[TrainingQuery], depth: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Rows of (better - worse) over every ordered pair within one query's
    head, and each pair's weight (1 / the query's pair count: every query
    counts once, however many candidates it has)."""
    differences: list[NDArray[np.float64]] = []
    weights: list[NDArray[np.float64]] = []
    for q in queries:
        rows, rel = q.rows[:depth], q.relevance[:depth]
        better, worse = np.nonzero(rel[:, None] > rel[None, :])
        if len(better) == 0:
            continue
        differences.append(rows[better] - rows[worse])
        weights.append(np.full(len(better), 1.0 / len(better)))
    if not differences:
        raise ValueError("no query has a relevant candidate above a non-relevant one")
    return np.vstack(differences), np.concatenate(weights)


def train(
    queries: Sequence[TrainingQuery],
    depth: int = RERANK_DEPTH,
    l2: float = 1e-3,
    trained_on: str = "",
) -> LinearRankModel:
    """Pairwise logistic regression by L-BFGS from zero weights: deterministic,
    so the same queries give the same model (and, rounded, the same bytes)."""
    from scipy.optimize import minimize

    stacked = np.vstack([q.rows[:depth] for q in queries])
    mean = stacked.mean(axis=0)
    scale = stacked.std(axis=0)
    scale[scale < 1e-9] = 1.0
    mean_r, scale_r = np.asarray(_rounded(mean)), np.asarray(_rounded(scale))
    standardized = [TrainingQuery((q.rows - mean_r) / scale_r, q.relevance) for q in queries]
    diffs, pair_weights = _pair_differences(standardized, depth)
    total = pair_weights.sum()

    def loss(w: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        margin = diffs @ w
        value = float(pair_weights @ np.logaddexp(0.0, -margin)) / total + l2 * float(w @ w)
        sigma = np.exp(-np.logaddexp(0.0, margin))  # 1 / (1 + e^margin)
        gradient = -(diffs.T @ (pair_weights * sigma)) / total + 2 * l2 * w
        return value, gradient

    found = minimize(
        loss,
        np.zeros(diffs.shape[1]),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 500, "gtol": 1e-8},
    )
    return LinearRankModel(
        FEATURES,
        tuple(mean_r.tolist()),
        tuple(scale_r.tolist()),
        _rounded(found.x),
        depth,
        trained_on,
    )


class LearnedReranker:
    """The Reranker port over a `LinearRankModel`: the head of the fused list
    (the model's depth) in model order, ties in fusion order; a query naming a
    code goes to the identifier reranker unchanged."""

    def __init__(
        self, model: LinearRankModel | None = None, identifiers: IdentifierReranker | None = None
    ) -> None:
        self.model = model or LinearRankModel.load()
        self.identifiers = identifiers or IdentifierReranker()

    def reorders(self, query: InterpretedQuery) -> bool:
        return True

    def rerank(self, query: InterpretedQuery, candidates: Sequence[RerankCandidate]) -> list[str]:
        if query.codes:
            return self.identifiers.rerank(query, candidates)
        head = list(candidates[: self.model.depth])
        if not head:
            return []
        scores = self.model.score(features(query, head))
        order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
        return [head[i].chunk_id for i in order] + [c.chunk_id for c in candidates[len(head) :]]


def training_query(
    query: InterpretedQuery,
    candidates: Sequence[RerankCandidate],
    relevance: Mapping[str, float],
) -> TrainingQuery:
    """A query's rows with each candidate's relevance looked up by chunk id."""
    return TrainingQuery(
        features(query, candidates),
        np.asarray([float(relevance.get(c.chunk_id, 0.0)) for c in candidates]),
    )
