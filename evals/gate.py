"""The publication gate: a candidate embedding model may not serve a tenant
when its relevance drops by more than a tolerance against the model serving
now. Both must have been evaluated on the tenant's suite."""

from __future__ import annotations

DEFAULT_TOLERANCE = 0.02  # nDCG@10, absolute


def relevance_regression(
    candidate_model: str,
    candidate_ndcg: float | None,
    current_model: str,
    current_ndcg: float | None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> str | None:
    """A refusal reason, or None when the candidate may be published."""
    if candidate_ndcg is None:
        return f"{candidate_model} has no eval run on this tenant; materialize retrieval_quality for it first"
    if current_ndcg is None:
        return None  # nothing to regress against (first model evaluated)
    drop = current_ndcg - candidate_ndcg
    if drop > tolerance:
        return (
            f"{candidate_model} scores hybrid nDCG@10 {candidate_ndcg:.3f}, {drop:.3f} below "
            f"{current_model}'s {current_ndcg:.3f} (tolerance {tolerance:.3f})"
        )
    return None


def run_regression(
    model_key: str,
    current_ndcg: float | None,
    previous_ndcg: float | None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> str | None:
    """A warning when this run's hybrid nDCG@10 dropped beyond the tolerance
    below the previous run of the same (tenant, model), or None."""
    if current_ndcg is None or previous_ndcg is None:
        return None
    drop = previous_ndcg - current_ndcg
    if drop > tolerance:
        return (
            f"{model_key} scores hybrid nDCG@10 {current_ndcg:.3f}, {drop:.3f} below its previous "
            f"run's {previous_ndcg:.3f} (tolerance {tolerance:.3f})"
        )
    return None
