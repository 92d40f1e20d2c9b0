"""retrieval_quality: the pipeline measures itself on every materialization.

For each tenant x embedding model with an eval suite, the eval workflow
(evals.workflow) scores the published corpus in place, keeps the run, writes
the per-query file and the HTML report; this module maps its outcome to
Dagster. Two checks: `relevance_gate` (blocking) refuses a model not serving
the tenant whose relevance drops beyond the tolerance below the serving
model's; `relevance_regression` warns when a run drops beyond the tolerance
below the previous run of the same (tenant, model). Neither is ever green when
the evaluation was skipped.
"""

import dagster as dg

from assets.partitions import tenant_and_model, tenant_model_partitions
from assets.publication import published_index
from evals.judge import judge_from_env
from evals.workflow import EvalRequest, EvalScored, EvalSkipped, evaluate
from resources.dagster_glue.platform_resource import GroundworkResource
from resources.models.llm import configured_answerer

RELEVANCE_GATE = "relevance_gate"
RELEVANCE_REGRESSION = "relevance_regression"


@dg.asset(
    partitions_def=tenant_model_partitions,
    deps=[published_index],
    group_name="evals",
    kinds={"python", "parquet"},
    check_specs=[
        dg.AssetCheckSpec(
            RELEVANCE_GATE,
            asset="retrieval_quality",
            blocking=True,
            description="A model not serving the tenant may not regress hybrid nDCG@10 beyond the tolerance.",
        ),
        dg.AssetCheckSpec(
            RELEVANCE_REGRESSION,
            asset="retrieval_quality",
            description="Hybrid nDCG@10 may not drop beyond the tolerance below the previous run of the same tenant and model.",
        ),
    ],
    description="Relevance, groundedness, citation correctness, ragas and judged answers; stored, reported, gated.",
)
def retrieval_quality(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    tenant_id, model_key = tenant_and_model(context)
    answerer = configured_answerer()
    outcome = evaluate(
        platform,
        EvalRequest(
            tenant_id, model_key, platform.settings.home / "eval-reports", context.run.run_id
        ),
        progress=lambda mode, done, total: _log_progress(context, mode, done, total),
        compose=answerer.answer if answerer else None,
        judge=judge_from_env(),
    )
    if isinstance(outcome, EvalSkipped):
        return _skipped(context, outcome.reason)
    return _scored(outcome)


def _log_progress(context: dg.AssetExecutionContext, mode: str, done: int, total: int) -> None:
    if done == total or done % 200 == 0:
        context.log.info(f"{mode}: {done}/{total} queries")


def _skipped(context: dg.AssetExecutionContext, why: str) -> dg.MaterializeResult:
    context.log.warning(f"skipped: {why}")
    return dg.MaterializeResult(
        metadata={"status": f"skipped: {why}"},
        check_results=[
            # Never green when skipped: a check that measured nothing has not
            # passed (a warning, so it does not fail the tenant's run).
            dg.AssetCheckResult(
                check_name=name,
                passed=False,
                severity=dg.AssetCheckSeverity.WARN,
                metadata={"status": f"skipped: {why}"},
            )
            for name in (RELEVANCE_GATE, RELEVANCE_REGRESSION)
        ],
    )


def _scored(outcome: EvalScored) -> dg.MaterializeResult:
    metadata: dict[str, dg.RawMetadataValue] = {
        **outcome.figures(),
        "report": dg.MetadataValue.path(str(outcome.report)),
        "per_query": dg.MetadataValue.path(str(outcome.per_query)),
    }
    previous = outcome.previous
    return dg.MaterializeResult(
        metadata=metadata,
        check_results=[
            dg.AssetCheckResult(
                check_name=RELEVANCE_GATE,
                passed=not outcome.gate_reasons,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={
                    "serving_model": outcome.serving_model,
                    "candidate_model": outcome.result.model_key,
                    "reasons": "; ".join(outcome.gate_reasons) or "none",
                },
            ),
            dg.AssetCheckResult(
                check_name=RELEVANCE_REGRESSION,
                passed=outcome.regression is None,
                severity=dg.AssetCheckSeverity.WARN,
                metadata={
                    "previous_run": previous.run_id
                    if previous
                    else "none (this run is the baseline)",
                    "previous_ndcg_at_10_hybrid": previous.ndcg_hybrid
                    if previous and previous.ndcg_hybrid is not None
                    else "none",
                    "ndcg_at_10_hybrid": outcome.result.metric("hybrid") or 0.0,
                    "tolerance": outcome.tolerance,
                    "reasons": outcome.regression or "none",
                },
            ),
        ],
    )


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[retrieval_quality])
