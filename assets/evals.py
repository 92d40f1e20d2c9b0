"""retrieval_quality: the pipeline measures itself on every materialization.

For each tenant x embedding model with an eval suite (a golden set of its
own, or a BEIR/SQuAD set converted into one), it scores the published corpus
in place: relevance (keyword, vector, hybrid, hybrid + reranker),
groundedness inside the budgeted context, citation correctness, ragas's
offline metrics and, with a judge endpoint, answer faithfulness and
relevancy. It stores the run, writes the per-query Parquet file and the
static HTML report. Two checks: `relevance_gate` (blocking) refuses a model
not serving the tenant whose relevance drops beyond the tolerance below the
serving model's; `relevance_regression` warns when a run drops beyond the
tolerance below the previous run of the same (tenant, model). Neither is
ever green when the evaluation was skipped.
"""

import dagster as dg

from assets.partitions import tenant_and_model, tenant_model_partitions
from assets.publication import published_index
from evals.fusion_cv import fusion_decision
from evals.gate import DEFAULT_TOLERANCE, run_regression
from evals.golden import GoldenSetError
from evals.judge import judge_from_env
from evals.per_query import write_per_query
from evals.publication_gate import eval_gate_reasons
from evals.report import render_report
from evals.suite import run_suite, suite_missing
from resources.dagster_glue.platform_resource import GroundworkResource
from resources.models.llm import configured_answerer
from resources.postgres.eval_runs import PostgresEvalRuns, new_run_id

RELEVANCE_GATE = "relevance_gate"
RELEVANCE_REGRESSION = "relevance_regression"


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
    runs = PostgresEvalRuns(platform.pool)
    suite = runs.suite(tenant_id)
    if suite is None:
        return _skipped(
            context,
            "no eval suite registered for this tenant (groundwork eval --golden FILE --tenant T registers one)",
        )
    missing = suite_missing(suite)
    if missing:
        return _skipped(context, missing)

    def progress(mode: str, done: int, total: int) -> None:
        if done == total or done % 200 == 0:
            context.log.info(f"{mode}: {done}/{total} queries")

    previous = runs.latest(tenant_id, model_key)
    answerer = configured_answerer()
    try:
        run = run_suite(
            platform.search_engines(model_key),
            tenant_id,
            model_key,
            suite,
            lambda version_id: platform.catalog.extraction_of(tenant_id, version_id),
            progress,
            compose=answerer.answer if answerer else None,
            judge=judge_from_env(),
        )
    except GoldenSetError as exc:
        return _skipped(context, f"the golden set is refused: {exc}")
    result = run.result
    run_id = new_run_id()
    report_dir = platform.settings.home / "eval-reports" / tenant_id
    per_query = write_per_query(
        report_dir / f"{run_id}.parquet",
        run_id,
        tenant_id,
        model_key,
        run.outcomes,
        run.grounded,
        run.answers.per_query,
    )
    result.per_query_path = str(per_query)
    runs.record(result, context.run.run_id, run_id=run_id)
    tenant = platform.catalog.get_tenant(tenant_id)
    serving = tenant.active_model if tenant else model_key
    history = runs.history(tenant_id)
    report = report_dir / "index.html"
    report.write_text(render_report(tenant_id, history, DEFAULT_TOLERANCE, serving))
    (report_dir / f"{run_id}.html").write_text(report.read_text())

    reasons = eval_gate_reasons(runs, tenant_id, model_key, serving)
    previous_ndcg = previous.ndcg_hybrid if previous else None
    regression = run_regression(model_key, result.metric("hybrid"), previous_ndcg)
    metadata: dict[str, dg.RawMetadataValue] = {
        "eval_run_id": run_id,
        "report": dg.MetadataValue.path(str(report)),
        "per_query": dg.MetadataValue.path(str(per_query)),
        "seconds": round(result.seconds, 1),
        "queries": result.relevance[0]["queries"] if result.relevance else 0,
    }
    for row in result.relevance:
        mode = row["mode"].replace("+", "_")
        metadata[f"ndcg_at_10_{mode}"] = round(float(row["ndcg_at_10"]), 4)
        metadata[f"recall_at_100_{mode}"] = round(float(row["recall_at_100"]), 4)
    cv = result.cross_validation
    if "out_of_fold" in cv:
        # the tenant serves its own constants only while tuning wins out of fold
        decision = fusion_decision(cv, model_key, serving)
        if decision.applies:
            platform.catalog.set_fusion(tenant_id, decision.constants)
        metadata["fusion_constants"] = decision.reason
        metadata["ndcg_at_10_hybrid_out_of_fold"] = float(cv["out_of_fold"])
        metadata["ndcg_at_10_hybrid_in_sample_best"] = float(cv["in_sample_best"])
        metadata["ndcg_at_10_plain_rrf"] = float(cv["plain_rrf"])
    elif "skipped" in cv:
        metadata["cross_validation_skipped"] = str(cv["skipped"])
    for row in result.groundedness:
        layer = row.get("layer", "raw")
        suffix = "" if layer == "raw" else f"_{layer}"
        metadata[f"groundedness_{row['dataset']}{suffix}"] = round(float(row["rate"]), 4)
    metadata["citation_correctness"] = round(float(result.citations.get("rate", 0.0)), 4)
    metadata["citation_misses"] = len(result.citations.get("misses", []))
    for section in (result.ragas, result.answers):
        for name, value in section.get("metrics", {}).items():
            metadata[f"ragas_{name}"] = round(float(value), 4)
        for name, why in section.get("skipped", {}).items():
            metadata[f"ragas_{name}"] = f"skipped: {why}"
    return dg.MaterializeResult(
        metadata=metadata,
        check_results=[
            dg.AssetCheckResult(
                check_name=RELEVANCE_GATE,
                passed=not reasons,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={
                    "serving_model": serving,
                    "candidate_model": model_key,
                    "reasons": "; ".join(reasons) or "none",
                },
            ),
            dg.AssetCheckResult(
                check_name=RELEVANCE_REGRESSION,
                passed=regression is None,
                severity=dg.AssetCheckSeverity.WARN,
                metadata={
                    "previous_run": previous.run_id
                    if previous
                    else "none (this run is the baseline)",
                    "previous_ndcg_at_10_hybrid": previous_ndcg
                    if previous_ndcg is not None
                    else "none",
                    "ndcg_at_10_hybrid": result.metric("hybrid") or 0.0,
                    "tolerance": DEFAULT_TOLERANCE,
                    "reasons": regression or "none",
                },
            ),
        ],
    )


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[retrieval_quality])
