"""retrieval_quality: the pipeline measures itself on every materialization.

For each tenant x embedding model with an eval suite, it scores relevance
(keyword, vector, hybrid, hybrid + reranker), groundedness inside the
budgeted context, citation correctness and ragas's offline metrics; stores
the run; writes the static HTML report; and its check is the publication
gate: a model that is not serving the tenant fails it when its relevance
drops more than the tolerance below the serving model's.
"""

import os

import dagster as dg

from assets.partitions import tenant_and_model, tenant_model_partitions
from assets.publication import published_index
from evals.publication_gate import eval_gate_reasons
from evals.report import render_report
from evals.suite import run_suite
from resources.dagster_resources import GroundworkResource
from resources.postgres.eval_runs import PostgresEvalRuns

RELEVANCE_GATE = "relevance_gate"


@dg.asset(
    partitions_def=tenant_model_partitions,
    deps=[published_index],
    group_name="evaluate",
    kinds={"python"},
    check_specs=[
        dg.AssetCheckSpec(
            RELEVANCE_GATE,
            asset="retrieval_quality",
            blocking=True,
            description="A model not serving the tenant may not regress hybrid nDCG@10 beyond the tolerance.",
        )
    ],
    description="Relevance, groundedness, citation correctness and ragas metrics; stored, reported, gated.",
)
def retrieval_quality(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    tenant_id, model_key = tenant_and_model(context)
    runs = PostgresEvalRuns(platform.pool)
    suite = runs.suite(tenant_id)
    if suite is None or not os.path.isdir(suite.beir_folder):
        why = (
            "no eval suite registered for this tenant (groundwork eval --beir FOLDER registers one)"
            if suite is None
            else f"the suite's folder {suite.beir_folder} is not on this machine"
        )
        context.log.warning(f"skipped: {why}")
        return dg.MaterializeResult(
            metadata={"status": f"skipped: {why}"},
            check_results=[
                # Never green when skipped: a gate that measured nothing has not
                # passed (a warning, so it does not fail the tenant's run).
                dg.AssetCheckResult(
                    check_name=RELEVANCE_GATE,
                    passed=False,
                    severity=dg.AssetCheckSeverity.WARN,
                    metadata={"status": f"skipped: {why}"},
                )
            ],
        )

    def progress(mode: str, done: int, total: int) -> None:
        if done == total or done % 200 == 0:
            context.log.info(f"{mode}: {done}/{total} queries")

    result = run_suite(
        platform.search_engines(model_key),
        tenant_id,
        model_key,
        suite,
        lambda version_id: platform.catalog.extraction_of(tenant_id, version_id),
        progress,
        judge_url=os.environ.get("GROUNDWORK_LLM_URL") or None,
    )
    run_id = runs.record(result, context.run.run_id)
    history = runs.history(tenant_id)
    report_dir = platform.settings.home / "eval-reports" / tenant_id
    report_dir.mkdir(parents=True, exist_ok=True)
    report = report_dir / "index.html"
    report.write_text(render_report(tenant_id, history))
    (report_dir / f"{run_id}.html").write_text(report.read_text())

    tenant = platform.catalog.get_tenant(tenant_id)
    serving = tenant.active_model if tenant else model_key
    reasons = eval_gate_reasons(runs, tenant_id, model_key, serving)
    metadata: dict[str, dg.RawMetadataValue] = {
        "eval_run_id": run_id,
        "report": dg.MetadataValue.path(str(report)),
        "seconds": round(result.seconds, 1),
        "queries": result.relevance[0]["queries"] if result.relevance else 0,
    }
    for row in result.relevance:
        mode = row["mode"].replace("+", "_")
        metadata[f"ndcg_at_10_{mode}"] = round(float(row["ndcg_at_10"]), 4)
        metadata[f"recall_at_100_{mode}"] = round(float(row["recall_at_100"]), 4)
    for row in result.groundedness:
        metadata[f"groundedness_{row['dataset']}"] = round(float(row["rate"]), 4)
    metadata["citation_correctness"] = round(float(result.citations.get("rate", 0.0)), 4)
    metadata["citation_misses"] = len(result.citations.get("misses", []))
    for name, value in result.ragas.get("metrics", {}).items():
        metadata[f"ragas_{name}"] = round(float(value), 4)
    for name, why in result.ragas.get("skipped", {}).items():
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
            )
        ],
    )
