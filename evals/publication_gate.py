"""The eval gate as the model switch sees it: reasons to refuse, from the
latest stored runs of the candidate and the serving model."""

from __future__ import annotations

from typing import Protocol

from evals.gate import DEFAULT_TOLERANCE, relevance_regression


class _Run(Protocol):
    @property
    def ndcg_hybrid(self) -> float | None: ...


class EvalHistory(Protocol):
    def latest(self, tenant_id: str, model_key: str) -> _Run | None: ...

    def suite(self, tenant_id: str) -> object | None: ...


def eval_gate_reasons(
    history: EvalHistory,
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
