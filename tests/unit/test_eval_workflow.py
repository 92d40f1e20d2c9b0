"""The eval workflow (evals.workflow.evaluate) on in-memory ports that pass
their conformance suites: what it keeps, writes and decides, and that a skip
records nothing. The asset and the CLI only map its outcome."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from evals.workflow import (
    NO_SUITE,
    EvalRequest,
    EvalScored,
    EvalSkipped,
    dataset_suite,
    evaluate,
    keep_golden_suite,
)
from groundwork.documents import ExtractedDocument
from groundwork.eval_records import EvalSuite
from groundwork.retrieval.kernel import SearchEngines
from tests.fakes import (
    InMemoryTenantDirectory,
)
from tests.fakes_evals import InMemoryEvalRuns
from tests.unit.in_memory_corpus import CorpusChunk, index_in_memory

TENANT = "acme"
SERVING = "serving-model"
CANDIDATE = "candidate-model"
DOCS = {
    "runbook": "ERR-4021 means a customer's volume has reached its storage quota.",
    "handbook": "Full-time employees receive 25 vacation days per calendar year.",
    "travel": "Hotel costs are reimbursed up to 180 USD per night.",
}
GOLDEN = [
    {"id": "quota", "query": "What does ERR-4021 mean?", "sources": {"runbook": 2}},
    {"id": "vacation", "query": "How many vacation days?", "sources": ["handbook"]},
    {"id": "hotel", "query": "How much for a hotel night?", "sources": {"handbook": 1}},
]


class Catalog(InMemoryTenantDirectory):
    def extraction_of(self, tenant_id: str, version_id: str) -> ExtractedDocument | None:
        return None  # no stored extraction: citations are checked against nothing


@dataclass
class Ports:
    eval_runs: InMemoryEvalRuns
    catalog: Catalog
    engines: SearchEngines

    def search_engines(self, model_key: str) -> SearchEngines:
        return self.engines


def _engines() -> SearchEngines:
    corpus = index_in_memory(
        TENANT,
        (CorpusChunk(f"{source}:0", text, (f"tenant:{TENANT}",)) for source, text in DOCS.items()),
    )
    return corpus.engines()


@pytest.fixture
def ports() -> Ports:
    catalog = Catalog()
    catalog.ensure_tenant(TENANT, TENANT, SERVING)
    return Ports(InMemoryEvalRuns({TENANT}), catalog, _engines())


@pytest.fixture
def golden_file(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in GOLDEN))
    return path


def _request(tmp_path: Path, model_key: str = SERVING) -> EvalRequest:
    return EvalRequest(TENANT, model_key, tmp_path / "reports", "dagster-run-7")


def test_no_suite_skips_and_records_nothing(ports: Ports, tmp_path: Path) -> None:
    assert evaluate(ports, _request(tmp_path)) == EvalSkipped(NO_SUITE)
    assert ports.eval_runs.history(TENANT) == []
    assert not (tmp_path / "reports").exists()


def test_a_suite_whose_files_are_elsewhere_skips_saying_where(ports: Ports, tmp_path: Path) -> None:
    ports.eval_runs.set_suite(TENANT, EvalSuite(golden_file=str(tmp_path / "gone.jsonl")))
    outcome = evaluate(ports, _request(tmp_path))
    assert (
        isinstance(outcome, EvalSkipped) and "gone.jsonl is not on this machine" in outcome.reason
    )
    assert ports.eval_runs.history(TENANT) == []


def test_a_golden_set_gone_bad_since_registration_skips_with_its_line(
    ports: Ports, golden_file: Path, tmp_path: Path
) -> None:
    ports.eval_runs.set_suite(TENANT, EvalSuite(golden_file=str(golden_file)))
    golden_file.write_text(json.dumps({"id": "x", "query": "no sources"}) + "\n")
    outcome = evaluate(ports, _request(tmp_path))
    assert isinstance(outcome, EvalSkipped)
    assert outcome.reason.startswith("the golden set is refused") and "line 1" in outcome.reason
    assert ports.eval_runs.history(TENANT) == []


def _first_scored_run(ports: Ports, golden_file: Path, tmp_path: Path) -> EvalScored:
    """The golden file kept as the tenant's suite, then a run of it, scored."""
    keep_golden_suite(ports.eval_runs, tmp_path / "home", TENANT, golden_file, None)
    outcome = evaluate(ports, _request(tmp_path))
    assert isinstance(outcome, EvalScored)
    return outcome


def test_a_run_is_kept_with_its_files_and_answers_both_gates(
    ports: Ports, golden_file: Path, tmp_path: Path
) -> None:
    outcome = _first_scored_run(ports, golden_file, tmp_path)
    [stored] = ports.eval_runs.history(TENANT)
    assert stored.run_id == outcome.run_id and stored.model_key == SERVING
    # two of three queries find their source first; the third expects the wrong one
    assert stored.ndcg_hybrid is not None and 0.5 < stored.ndcg_hybrid < 1.0
    assert stored.results["per_query_path"] == str(outcome.per_query)
    assert outcome.per_query == tmp_path / "reports" / TENANT / f"{outcome.run_id}.parquet"
    assert outcome.per_query.is_file()
    assert (
        outcome.report.read_text() == (outcome.report.parent / f"{outcome.run_id}.html").read_text()
    )
    assert TENANT in outcome.report.read_text()
    # the serving model's first run: nothing to regress against, nothing to gate
    assert outcome.gate_reasons == () and outcome.regression is None and outcome.previous is None
    # three queries are too few to tune fusion on: the tenant keeps the defaults
    assert outcome.fusion is None
    assert "cross_validation_skipped" in outcome.figures()
    tenant = ports.catalog.get_tenant(TENANT)
    assert tenant is not None and tenant.fusion is None
    figures = outcome.figures()
    assert figures["eval_run_id"] == outcome.run_id and figures["queries"] == 3
    assert figures["ndcg_at_10_hybrid"] == pytest.approx(stored.ndcg_hybrid, abs=1e-4)


def test_a_run_below_its_previous_warns_and_a_weaker_candidate_is_refused(
    ports: Ports, golden_file: Path, tmp_path: Path
) -> None:
    first = _first_scored_run(ports, golden_file, tmp_path)
    # runs that scored hybrid nDCG@10 1.0, for the serving model and the candidate
    rows = [{**row, "ndcg_at_10": 1.0} for row in first.result.relevance]
    for model_key in (SERVING, CANDIDATE):
        ports.eval_runs.record(replace(first.result, model_key=model_key, relevance=rows))
    outcome = evaluate(ports, _request(tmp_path, CANDIDATE))
    assert isinstance(outcome, EvalScored)
    assert outcome.previous is not None and outcome.previous.ndcg_hybrid == 1.0
    assert outcome.regression is not None and "below its previous run's 1.000" in outcome.regression
    # the serving model scored 1.0: the candidate's run now falls beyond the tolerance
    [reason] = outcome.gate_reasons
    assert CANDIDATE in reason and SERVING in reason


def test_a_dataset_suite_names_sentences_only_when_they_are_there(tmp_path: Path) -> None:
    folder = tmp_path / "scifact"
    folder.mkdir()
    without = dataset_suite(folder, "test", 10, 50, folder / "sentences", None)
    assert without.sentences_folder is None and without.beir_folder == str(folder.resolve())
    (folder / "sentences").mkdir()
    squad = tmp_path / "squad.json"
    with_both = dataset_suite(folder, "dev", None, None, folder / "sentences", squad)
    assert with_both.sentences_folder == str((folder / "sentences").resolve())
    assert with_both.squad_file == str(squad.resolve()) and with_both.split == "dev"
