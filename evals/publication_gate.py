"""The eval gate as the model switch sees it: reasons to refuse, from the
latest stored runs of the candidate and the serving model."""

from __future__ import annotations

from evals.gate import DEFAULT_TOLERANCE, relevance_regression
from groundwork.eval_records import EvalRuns


def eval_gate_reasons(
    history: EvalRuns,
    tenant_id: str,
    candidate: str,
    serving: str,
    tolerance: float = DEFAULT_TOLERANCE,
) -> tuple[str, ...]:
    """No suite: nothing to gate on (the tenant is not evaluated). Otherwise
    the candidate must have a run and must not regress beyond the tolerance."""
    if history.suite(tenant_id) is None or candidate == serving:
        return ()
    mine = history.latest(tenant_id, candidate)
    theirs = history.latest(tenant_id, serving)
    reason = relevance_regression(
        candidate,
        mine.ndcg_hybrid if mine else None,
        serving,
        theirs.ndcg_hybrid if theirs else None,
        tolerance,
    )
    return (reason,) if reason else ()
