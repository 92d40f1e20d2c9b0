"""Eval runs as the CLI prints them, and the refusals a script stops on; shared
by `groundwork eval` and `groundwork demo`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings


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


def register_golden(
    runs: Any, settings: GroundworkSettings, tenant_id: str, golden: Path, max_queries: int | None
) -> Path:
    """Keep a checked golden set under GROUNDWORK_HOME (the suite must not depend
    on where the file was) and make it the tenant's eval suite."""
    from evals.suite import EvalSuite

    kept = settings.home / "eval-golden" / f"{tenant_id}.jsonl"
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(golden.read_text(encoding="utf-8"), encoding="utf-8")
    runs.set_suite(tenant_id, EvalSuite(golden_file=str(kept), max_queries=max_queries))
    return kept
