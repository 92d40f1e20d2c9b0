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
    for leg, ids in legs.items():
        seen: set[str] = set()
        for rank, chunk_id in enumerate(ids, start=1):
            if chunk_id in seen:
                continue
            seen.add(chunk_id)
            weight = 1.0 if weights is None else weights.get(leg, 1.0)
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (k + rank)
            ranks.setdefault(chunk_id, {})[leg] = rank
    ordered = sorted(scores, key=lambda c: (-scores[c], min(ranks[c].values()), c))
    return [FusedCandidate(c, scores[c], ranks[c]) for c in ordered]
