"""The eval workflow, once: what a tenant is evaluated on, and one evaluation
of a tenant x embedding model on it. The `retrieval_quality` asset maps a
Dagster partition to `evaluate` and its outcome to metadata and checks; every
eval path of the CLI registers its suite here and materializes that asset.

An evaluation scores the published corpus in place (relevance per mode,
groundedness, citation correctness, ragas, judged answers), keeps the run in
the `EvalRuns` port, writes the per-query Parquet file and the HTML report,
answers both gates (the blocking publication gate, the run-over-run
regression warning) and lets the serving model's run decide the tenant's
fusion constants. It reads ports only: no adapter, no framework.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from evals.fusion_cv import fusion_decision
from evals.gate import DEFAULT_TOLERANCE, run_regression
from evals.golden import GoldenSetError
from evals.judge import AnswerComposer, JudgeEndpoint
from evals.per_query import write_per_query
from evals.publication_gate import eval_gate_reasons
from evals.report import render_report
from evals.suite import Progress, run_suite, suite_missing
from groundwork.catalog import Tenant
from groundwork.documents import ExtractedDocument
from groundwork.eval_records import EvalResult, EvalRuns, EvalSuite, StoredRun, new_run_id
from groundwork.retrieval.kernel import FusionConstants, SearchEngines

NO_SUITE = (
    "no eval suite registered for this tenant "
    "(groundwork eval --golden FILE --tenant T registers one)"
)


class EvalCatalog(Protocol):
    """The catalog parts an evaluation reads and the one setting it writes."""

    def get_tenant(self, tenant_id: str) -> Tenant | None: ...

    def set_fusion(self, tenant_id: str, fusion: FusionConstants | None) -> bool: ...

    def extraction_of(self, tenant_id: str, version_id: str) -> ExtractedDocument | None: ...


class EvalPorts(Protocol):
    """What an evaluation needs of the platform (the composition root's is one)."""

    @property
    def eval_runs(self) -> EvalRuns: ...

    @property
    def catalog(self) -> EvalCatalog: ...

    def search_engines(self, model_key: str) -> SearchEngines: ...


@dataclass(frozen=True, slots=True)
class EvalRequest:
    tenant_id: str
    model_key: str
    report_root: Path  # a tenant's reports and per-query files go in report_root/<tenant>
    orchestrator_run: str | None = None  # the Dagster run evaluating, kept with the run


@dataclass(frozen=True, slots=True)
class EvalSkipped:
    """Nothing was measured, and why (never reported as a pass)."""

    reason: str


@dataclass(frozen=True, slots=True)
class EvalScored:
    run_id: str
    result: EvalResult
    serving_model: str
    report: Path  # the tenant's report (index.html); a copy is kept per run
    per_query: Path
    #: the blocking gate's refusals of this model (empty: it may serve)
    gate_reasons: tuple[str, ...]
    previous: StoredRun | None  # the previous run of this tenant and model
    regression: str | None  # the warning when this run dropped below the previous
    fusion: str | None  # what became of the tenant's fusion constants, when tuning ran
    tolerance: float = DEFAULT_TOLERANCE

    def figures(self) -> dict[str, float | int | str]:
        """The run's figures flat, named as the asset's metadata names them."""
        result = self.result
        figures: dict[str, float | int | str] = {
            "eval_run_id": self.run_id,
            "seconds": round(result.seconds, 1),
            "queries": result.relevance[0]["queries"] if result.relevance else 0,
        }
        for row in result.relevance:
            mode = row["mode"].replace("+", "_")
            figures[f"ndcg_at_10_{mode}"] = round(float(row["ndcg_at_10"]), 4)
            figures[f"recall_at_100_{mode}"] = round(float(row["recall_at_100"]), 4)
        cv = result.cross_validation
        if "out_of_fold" in cv:
            figures["fusion_constants"] = self.fusion or ""
            figures["ndcg_at_10_hybrid_out_of_fold"] = float(cv["out_of_fold"])
            figures["ndcg_at_10_hybrid_in_sample_best"] = float(cv["in_sample_best"])
            figures["ndcg_at_10_plain_rrf"] = float(cv["plain_rrf"])
        elif "skipped" in cv:
            figures["cross_validation_skipped"] = str(cv["skipped"])
        for row in result.groundedness:
            layer = row.get("layer", "raw")
            suffix = "" if layer == "raw" else f"_{layer}"
            figures[f"groundedness_{row['dataset']}{suffix}"] = round(float(row["rate"]), 4)
        figures["citation_correctness"] = round(float(result.citations.get("rate", 0.0)), 4)
        figures["citation_misses"] = len(result.citations.get("misses", []))
        for section in (result.ragas, result.answers):
            for name, value in section.get("metrics", {}).items():
                figures[f"ragas_{name}"] = round(float(value), 4)
            for name, why in section.get("skipped", {}).items():
                figures[f"ragas_{name}"] = f"skipped: {why}"
        return figures


def evaluate(
    ports: EvalPorts,
    request: EvalRequest,
    progress: Progress | None = None,
    compose: AnswerComposer | None = None,
    judge: JudgeEndpoint | None = None,
) -> EvalSkipped | EvalScored:
    """Score one tenant x model on the tenant's suite, keep the run, write its
    files and answer the gates. Skipped, with the reason, when the tenant has
    no suite, its files are not on this machine or its golden set is refused."""
    tenant_id, model_key = request.tenant_id, request.model_key
    runs = ports.eval_runs
    suite = runs.suite(tenant_id)
    if suite is None:
        return EvalSkipped(NO_SUITE)
    missing = suite_missing(suite)
    if missing:
        return EvalSkipped(missing)
    previous = runs.latest(tenant_id, model_key)
    mark = runs.served_mark(tenant_id)  # before scoring: a change meanwhile is evaluated again
    try:
        run = run_suite(
            ports.search_engines(model_key),
            tenant_id,
            model_key,
            suite,
            lambda version_id: ports.catalog.extraction_of(tenant_id, version_id),
            progress,
            compose=compose,
            judge=judge,
        )
    except GoldenSetError as exc:
        return EvalSkipped(f"the golden set is refused: {exc}")
    result = run.result
    run_id = new_run_id()
    report_dir = request.report_root / tenant_id
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
    runs.record(result, request.orchestrator_run, run_id=run_id, mark=mark)
    tenant = ports.catalog.get_tenant(tenant_id)
    serving = tenant.active_model if tenant else model_key
    report = report_dir / "index.html"
    report.write_text(render_report(tenant_id, runs.history(tenant_id), DEFAULT_TOLERANCE, serving))
    (report_dir / f"{run_id}.html").write_text(report.read_text())
    return EvalScored(
        run_id=run_id,
        result=result,
        serving_model=serving,
        report=report,
        per_query=per_query,
        gate_reasons=eval_gate_reasons(runs, tenant_id, model_key, serving),
        previous=previous,
        regression=run_regression(
            model_key, result.metric("hybrid"), previous.ndcg_hybrid if previous else None
        ),
        fusion=_decide_fusion(ports.catalog, result, serving),
    )


def _decide_fusion(catalog: EvalCatalog, result: EvalResult, serving: str) -> str | None:
    """The tenant serves its own constants only while tuning wins out of fold,
    and only a run of the serving model decides; None when tuning did not run."""
    if "out_of_fold" not in result.cross_validation:
        return None
    decision = fusion_decision(result.cross_validation, result.model_key, serving)
    if decision.applies:
        catalog.set_fusion(result.tenant_id, decision.constants)
    return decision.reason


def keep_golden_suite(
    runs: EvalRuns, home: Path, tenant_id: str, golden: Path, max_queries: int | None
) -> Path:
    """Keep a checked golden set under GROUNDWORK_HOME (the suite must not depend
    on where the file was) and make it the tenant's eval suite."""
    kept = home / "eval-golden" / f"{tenant_id}.jsonl"
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(golden.read_text(encoding="utf-8"), encoding="utf-8")
    runs.set_suite(tenant_id, EvalSuite(golden_file=str(kept), max_queries=max_queries))
    return kept


def dataset_suite(
    folder: Path,
    split: str,
    max_queries: int | None,
    limit_docs: int | None,
    sentences: Path,
    squad_file: Path | None,
) -> EvalSuite:
    """The suite of a BEIR folder (or the SQuAD file written into one) ingested
    as a tenant of its own; sentence-level evidence only when the folder is there."""
    return EvalSuite(
        beir_folder=str(folder.resolve()),
        split=split,
        max_queries=max_queries,
        limit_docs=limit_docs,
        sentences_folder=str(sentences.resolve()) if sentences.is_dir() else None,
        squad_file=str(squad_file.resolve()) if squad_file is not None else None,
    )
