"""The BEIR evaluation runs through the real pipeline on a tiny BEIR folder built here."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import dagster as dg
import pytest

from evals.retrieval import MODES, evaluate, write_corpus
from resources.composition.platform import Platform
from tests.e2e.helpers import resource, run_pipeline

DOCS = {
    "d1": (
        "Replica lag",
        "A read replica falls behind the primary when long transactions block replay.",
    ),
    "d2": ("Vacation policy", "Employees receive twenty five vacation days every calendar year."),
    "d3": ("Quota errors", "ERR-4021 is raised when a storage volume exceeds its quota."),
}
QUERIES = {
    "q1": "why does a replica fall behind the primary",
    "q2": "what does ERR-4021 mean",
    "q3": "how many vacation days",
}
QRELS = [("q1", "d1", 1), ("q2", "d3", 1), ("q3", "d2", 1)]


def _beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w") as handle:
        for doc_id, (title, text) in DOCS.items():
            handle.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w") as handle:
        for query_id, text in QUERIES.items():
            handle.write(json.dumps({"_id": query_id, "text": text}) + "\n")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in QRELS)
    )
    return folder


def test_every_mode_scores_a_trivial_corpus_perfectly(
    platform: Platform, index_prefix: str, tmp_path: Path
) -> None:
    folder = _beir(tmp_path / "tiny")
    tenant = f"e-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    assert write_corpus(folder, platform.settings.inbox_dir, tenant) == 3
    run_pipeline(
        dg.DagsterInstance.ephemeral(),
        tenant,
        platform.settings.default_model_key,
        resource(index_prefix),
    )
    scores = evaluate(
        platform.search_engines(platform.settings.default_model_key), tenant, folder, "test"
    )
    assert [s.mode for s in scores] == list(MODES)
    for s in scores:
        assert s.queries == 3
        assert s.ndcg_at_10 == 1.0 and s.recall_at_100 == 1.0 and s.mrr_at_10 == 1.0, s


def _sentences(folder: Path) -> Path:
    """SciFact-layout sentence evidence for the tiny corpus."""
    target = folder / "sentences"
    target.mkdir()
    with open(target / "corpus.jsonl", "w") as handle:
        for doc_id, (title, text) in DOCS.items():
            handle.write(json.dumps({"doc_id": doc_id, "title": title, "abstract": [text]}) + "\n")
    claims = [
        {
            "id": 1,
            "claim": QUERIES["q1"],
            "evidence": {"d1": [{"sentences": [0], "label": "SUPPORT"}]},
        },
        {
            "id": 2,
            "claim": QUERIES["q2"],
            "evidence": {"d3": [{"sentences": [0], "label": "SUPPORT"}]},
        },
    ]
    (target / "claims_train.jsonl").write_text("".join(json.dumps(c) + "\n" for c in claims))
    return target


def test_the_eval_asset_scores_stores_reports_and_gates(
    platform: Platform, index_prefix: str, tmp_path: Path
) -> None:
    from assets.evals import retrieval_quality
    from assets.partitions import tenant_model_key
    from evals.publication_gate import eval_gate_reasons
    from evals.suite import EvalSuite
    from pipelines.definitions import ALL_ASSETS

    folder = _beir(tmp_path / "tiny")
    sentences = _sentences(folder)
    tenant = f"e-{uuid.uuid4().hex[:8]}"
    model = platform.settings.default_model_key
    platform.catalog.ensure_tenant(tenant, tenant, model)
    write_corpus(folder, platform.settings.inbox_dir, tenant)
    runs = platform.eval_runs
    runs.set_suite(
        tenant,
        EvalSuite(beir_folder=str(folder), split="test", sentences_folder=str(sentences)),
    )
    instance = dg.DagsterInstance.ephemeral()
    run_pipeline(instance, tenant, model, resource(index_prefix))
    result = dg.materialize(
        ALL_ASSETS,
        selection=[retrieval_quality],
        partition_key=tenant_model_key(tenant, model),
        instance=instance,
        resources={"groundwork": resource(index_prefix)},
    )
    assert result.success
    metadata = {
        k: v.value
        for event in result.get_asset_materialization_events()
        for k, v in event.step_materialization_data.materialization.metadata.items()
    }
    assert metadata["ndcg_at_10_hybrid_rerank"] == 1.0 and metadata["ndcg_at_10_keyword"] == 1.0
    assert metadata["groundedness_scifact-sentences"] == 1.0
    assert metadata["citation_correctness"] == 1.0 and metadata["citation_misses"] == 0
    assert metadata["ragas_id_based_context_recall"] == 1.0
    assert str(metadata["ragas_faithfulness"]).startswith("skipped: no judge model")
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    assert checks["relevance_gate"].passed and checks["relevance_regression"].passed
    report = Path(str(metadata["report"]))
    html = report.read_text()
    assert (
        tenant in html and "nDCG@10" in html and "<svg" in html and "Citation correctness" in html
    )
    [stored] = runs.history(tenant)
    assert stored.ndcg_hybrid == 1.0 and stored.suite["split"] == "test"

    # the gate: a candidate model with no run is refused; one that regresses is refused
    other = "minilm_l6_v2_int8" if model != "minilm_l6_v2_int8" else "bge_small_en_v15_q"
    assert "no eval run" in eval_gate_reasons(runs, tenant, other, model)[0]
    from evals.suite import EvalResult

    worse = EvalResult(tenant, other, EvalSuite(beir_folder=str(folder)))
    worse.relevance = [{"mode": "hybrid", "ndcg_at_10": 0.9}]
    runs.record(worse)
    [reason] = eval_gate_reasons(runs, tenant, other, model)
    assert "0.100 below" in reason
    close = EvalResult(tenant, other, EvalSuite(beir_folder=str(folder)))
    close.relevance = [{"mode": "hybrid", "ndcg_at_10": 0.99}]
    runs.record(close)
    assert eval_gate_reasons(runs, tenant, other, model) == ()


def test_the_eval_asset_skips_visibly_without_a_suite(
    platform: Platform, index_prefix: str
) -> None:
    from assets.evals import retrieval_quality
    from assets.partitions import tenant_model_key
    from pipelines.definitions import ALL_ASSETS

    tenant = f"e-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenant", [tenant])
    result = dg.materialize(
        ALL_ASSETS,
        selection=[retrieval_quality],
        partition_key=tenant_model_key(tenant, platform.settings.default_model_key),
        instance=instance,
        resources={"groundwork": resource(index_prefix)},
    )
    [event] = result.get_asset_materialization_events()
    status = event.step_materialization_data.materialization.metadata["status"].value
    assert str(status).startswith("skipped: no eval suite")
    # a skipped check is never green: not passed, at warning severity (the UI shows it yellow)
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    assert set(checks) == {"relevance_gate", "relevance_regression"}
    for check in checks.values():
        assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
        assert str(check.metadata["status"].value).startswith("skipped: no eval suite")


def test_the_cli_ingests_a_beir_folder_as_its_own_tenant_and_scores_it(
    platform: Platform,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`groundwork eval --beir FOLDER`: the folder's tenant is made, its suite
    registered through the eval workflow, its corpus ingested through Dagster
    and scored by the retrieval_quality asset; the run is stored and printed."""
    from evals.retrieval import eval_tenant_id
    from groundwork_cli.main import main
    from tests.conftest import TEST_DATABASE

    monkeypatch.setenv("GROUNDWORK_DATABASE_NAME", TEST_DATABASE)
    monkeypatch.setenv("DAGSTER_HOME", str(platform.settings.dagster_home))
    monkeypatch.delenv("GROUNDWORK_LLM_URL", raising=False)
    monkeypatch.delenv("GROUNDWORK_JUDGE_URL", raising=False)
    folder = _beir(tmp_path / "tiny")
    assert main(["eval", "--beir", str(folder), "--split", "test"]) == 0
    out = capsys.readouterr().out
    tenant = eval_tenant_id(folder)
    suite = platform.eval_runs.suite(tenant)
    assert suite is not None and suite.beir_folder == str(folder.resolve())
    assert suite.split == "test" and suite.sentences_folder is None
    [stored] = platform.eval_runs.history(tenant)
    assert stored.ndcg_hybrid == 1.0
    assert "relevance_gate passed: True" in out and f"report: {platform.settings.home}" in out
    # the eval's corpus is an inbox folder, and its run carries the folder's
    # fingerprint: the inbox sensor adopts it instead of ingesting it again
    # (it re-ran the 5,183-file SciFact tenant, 18 s, the first time a stack
    # started on the home)
    import dagster as dg

    from groundwork.connectors.inbox import FINGERPRINT_LABEL
    from resources.connectors.inbox_folder import inbox_fingerprint

    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs(dg.RunsFilter(tags={"dagster/partition": tenant}))
        fingerprint = inbox_fingerprint(platform.settings.inbox_dir, tenant)
        assert any(r.tags.get(FINGERPRINT_LABEL) == fingerprint for r in runs), [
            r.tags for r in runs
        ]


def test_the_cli_refuses_an_eval_that_names_no_corpus(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from groundwork_cli.main import main

    assert main(["eval"]) == 2
    assert "give --golden FILE --tenant T, --beir FOLDER or --squad FILE" in capsys.readouterr().out
