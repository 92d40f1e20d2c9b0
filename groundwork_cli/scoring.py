"""The CLI's one eval flow, and eval runs as it prints them. Each model of a
tenant is scored by materializing the retrieval_quality asset through Dagster
(the run and its checks show in the UI as if the daemon had run it; the asset
calls evals.workflow.evaluate), then the stored run is read back and printed.
`groundwork eval` (--golden, --beir, --squad) and `groundwork demo` all score
through `score_model`; their suites are registered by evals.workflow."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from groundwork.eval_records import EvalRuns, StoredRun
from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings

if TYPE_CHECKING:
    import dagster as dg

    from resources.composition.platform import Platform


@dataclass(frozen=True, slots=True)
class ModelScore:
    model_key: str
    run: StoredRun | None  # the newest stored run of the tenant and model
    found: dict[str, object]  # the asset's metadata and its checks' results

    @property
    def failure(self) -> str | None:
        """Why there is nothing to print: the evaluation was skipped (with the
        asset's reason) or no run is stored; None when it was scored."""
        if "status" in self.found:
            return str(self.found["status"])
        return "no run stored" if self.run is None else None


@contextmanager
def eval_platform(settings: GroundworkSettings) -> Iterator[Platform]:
    """Engines up (or reused), the Dagster instance on them and the platform
    connected: what an eval command needs when nothing else started them."""
    from resources.composition.platform import connect, ensure_engines
    from resources.dagster_glue.instance import write_instance_config
    from resources.dagster_glue.object_compute_logs import compute_logs_for

    endpoints = ensure_engines(settings)
    write_instance_config(
        settings.dagster_home, endpoints.server_url, compute_logs=compute_logs_for(settings)
    )
    os.environ["DAGSTER_HOME"] = str(settings.dagster_home)
    platform = connect(settings, endpoints)
    try:
        yield platform
    finally:
        platform.close()


def score_model(
    instance: dg.DagsterInstance, runs: EvalRuns, tenant_id: str, model_key: str
) -> ModelScore:
    from groundwork_cli.ingest import evaluate_partition

    if not instance.has_dynamic_partition("tenant", tenant_id):
        instance.add_dynamic_partitions("tenant", [tenant_id])
    found = evaluate_partition(instance, tenant_id, model_key)
    return ModelScore(model_key, runs.latest(tenant_id, model_key), found)


def score_and_print(
    instance: dg.DagsterInstance, runs: EvalRuns, tenant_id: str, models: Sequence[str]
) -> int:
    """Score each model and print its run in full. Exit 1 at the first model
    that could not be scored, or at the end when a gate refused one."""
    refused: list[str] = []
    for model_key in models:
        started = time.monotonic()
        console.print(f"evaluating {model_key} (retrieval_quality asset) ...")
        score = score_model(instance, runs, tenant_id, model_key)
        if score.failure is not None or score.run is None:
            console.print(f"[red]{model_key}: {score.failure}[/]")
            return 1
        print_eval_run(model_key, score.run.results, score.found)
        refused += gate_refusals(model_key, score.found)
        console.print(f"eval wall time {time.monotonic() - started:.1f} s")
    return report_refusals(refused)


def summary_first_line(results: dict[str, Any]) -> str:
    """Summary-first search beside raw-chunk search (both hybrid + reranker):
    nDCG@10 and groundedness, and the difference, whichever way it goes."""
    ndcg = {r["mode"]: float(r["ndcg_at_10"]) for r in results["relevance"]}
    grounded = {g.get("layer", "raw"): float(g["rate"]) for g in results["groundedness"]}
    if "summary_first" not in ndcg or "hybrid+rerank" not in ndcg:
        return "summary_first: not measured in this run"
    line = (
        f"summary_first vs raw (hybrid+rerank): nDCG@10 {ndcg['summary_first']:.3f} vs "
        f"{ndcg['hybrid+rerank']:.3f} ({ndcg['summary_first'] - ndcg['hybrid+rerank']:+.3f})"
    )
    if "summary_first" in grounded and "raw" in grounded:
        line += (
            f"; groundedness {grounded['summary_first']:.3f} vs {grounded['raw']:.3f} "
            f"({grounded['summary_first'] - grounded['raw']:+.3f})"
        )
    return line


def print_eval_run(model_key: str, results: dict[str, Any], found: dict[str, object]) -> None:
    """An eval run as the CLI prints it: relevance, both groundedness measures,
    citations, ragas, the checks and where the report and per-query file are."""
    from evals.fusion_cv import CrossValidation, format_cross_validation
    from evals.retrieval import format_table

    print(format_table(model_key, results["relevance"]))
    print(summary_first_line(results))
    for g in results["groundedness"]:
        print(
            f"groundedness (evidence in context) {g['dataset']}, {g.get('layer', 'raw')} search: "
            f"{g['rate']:.3f} of {g['items']} items inside a {g['budget_tokens']}-token context "
            f"(document in hits {g['doc_in_hits_rate']:.3f})"
        )
    c = results["citations"]
    print(f"citation correctness: {c['verified']}/{c['checked']} = {c['rate']:.3f}")
    for miss in c["misses"][:10]:
        print(f"  miss: {miss}")
    for section, label in ((results["ragas"], "ragas"), (results.get("answers", {}), "answers")):
        for name, value in section.get("metrics", {}).items():
            print(f"{label} {name}: {value:.3f}")
        for name, why in section.get("skipped", {}).items():
            print(f"{label} {name}: skipped ({why})")
    cv = results.get("cross_validation", {})
    if "skipped" in cv:
        print(f"cross-validated fusion: skipped ({cv['skipped']})")
    elif cv:
        print(format_cross_validation(model_key, CrossValidation.from_summary(cv)))
    for check in ("relevance_gate", "relevance_regression"):
        passed = found.get(f"check:{check}")
        reasons = str(found.get(f"check:{check}:reasons", "") or "")
        print(f"{check} passed: {passed}" + ("" if passed else f" ({reasons})"))
    print(f"report: {found.get('report')}")
    print(f"per-query results: {found.get('per_query')}")


def gate_refusals(model_key: str, found: dict[str, object]) -> list[str]:
    """The blocking check's refusal of this model, if it refused (a check that
    did not run is not a pass, but the run's own failure is reported before)."""
    if found.get("check:relevance_gate") is False:
        reasons = str(found.get("check:relevance_gate:reasons", "") or "")
        return [f"{model_key}: {reasons or 'the relevance gate failed'}"]
    return []


def report_refusals(refused: list[str]) -> int:
    """Exit 1 when a gate refused a model (its scores are stored and printed
    above), so a script or CI run stops there; 0 otherwise."""
    for line in refused:
        console.print(f"[red]relevance gate refused {line}[/]")
    return 1 if refused else 0
