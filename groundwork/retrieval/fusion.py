"""Reciprocal-rank fusion: ranks only, no score calibration between legs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

RRF_K = 60


@dataclass(frozen=True, slots=True)
class FusedCandidate:
    chunk_id: str
    score: float
    ranks: dict[str, int]  # leg name -> 1-based rank in that leg


def reciprocal_rank_fusion(
    legs: Mapping[str, Sequence[str]],
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[FusedCandidate]:
    """Fuse ranked id lists by rank alone (scores are never compared across
    legs). A leg's weight scales its 1/(k + rank) terms; ties break on the best
    single rank, then the id, so the order is deterministic."""
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    best: dict[str, int] = {}
    for leg, ids in legs.items():
        weight = 1.0 if weights is None else weights.get(leg, 1.0)
        for rank, chunk_id in enumerate(ids, start=1):
            seen = ranks.get(chunk_id)
            if seen is None:
                ranks[chunk_id] = {leg: rank}
                scores[chunk_id] = weight / (k + rank)
                best[chunk_id] = rank
            elif leg not in seen:  # a leg's repeat of an id counts once, at its first rank
                seen[leg] = rank
                scores[chunk_id] += weight / (k + rank)
                best[chunk_id] = min(best[chunk_id], rank)
    ordered = sorted(scores, key=lambda c: (-scores[c], best[c], c))
    return [FusedCandidate(c, scores[c], ranks[c]) for c in ordered]
