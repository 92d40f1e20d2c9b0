"""A tenant's own golden set scored in place through retrieval_quality: the
per-query Parquet file, the regression check, and answer-level judging
against a loopback server speaking the chat-completions wire format with
deterministic replies (one judge that finds the answer supported, one that
does not, so faithfulness is shown to move)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pyarrow.parquet as pq
import pytest

from resources.composition.platform import Platform
from tests.chat_endpoint import ChatEndpoint, serving
from tests.e2e.helpers import resource, run_pipeline, write_inbox

FILES = {
    "runbooks/incident-runbook.md": (
        "# Incident Runbook\n\n## ERR-4021: Quota exceeded\n\nERR-4021 means a customer's volume "
        "has reached its storage quota. Writes are refused until space is freed.\n\n"
        "## ERR-5003: Replica lag\n\nERR-5003 fires when a read replica falls more than 30 seconds "
        "behind the primary.\n"
    ),
    "employee-handbook.md": (
        "# Employee Handbook\n\n## Vacation\n\nFull-time employees receive 25 vacation days per "
        "calendar year.\n\n## Equipment\n\nEach employee receives a laptop, replaced every three years.\n"
    ),
    "travel-policy.md": (
        "# Travel Policy\n\nHotel costs are reimbursed up to 180 USD per night. Book flights 14 days "
        "ahead through the travel portal.\n"
    ),
}
GOLDEN = [
    {
        "id": "quota",
        "query": "What does ERR-4021 mean?",
        "sources": {"runbooks/incident-runbook.md": 2},
        "evidence": ["reached its storage quota"],
        "reference_answer": "The volume reached its storage quota.",
    },
    {
        "id": "vacation",
        "query": "How many vacation days do employees get?",
        "sources": ["employee-handbook"],  # a filename stem names the source too
        "evidence": ["25 vacation days"],
    },
    {
        # expects the wrong source on purpose: a query that cannot score 1.0
        "id": "hotel",
        "query": "How much is reimbursed for a hotel night?",
        "sources": {"employee-handbook.md": 1},
        "evidence": ["a span that is nowhere in the corpus"],
    },
]


def _reply(body: dict[str, Any]) -> str:
    """Deterministic chat completions: `composer` writes the answer, judges
    named `judge-supports` / `judge-refutes` give every statement verdict 1 / 0."""
    model = body["model"]
    text = "\n".join(str(m.get("content", "")) for m in body["messages"])
    if model == "composer":
        return "ERR-4021 means the volume has reached its storage quota [1]."
    if "judge the faithfulness" in text:
        verdict = 1 if model == "judge-supports" else 0
        return json.dumps(
            {
                "statements": [
                    {
                        "statement": "ERR-4021 means the volume has reached its storage quota.",
                        "reason": "stated in passage 1" if verdict else "not in the context",
                        "verdict": verdict,
                    }
                ]
            }
        )
    if "Break down each sentence" in text:
        return json.dumps(
            {"statements": ["ERR-4021 means the volume has reached its storage quota."]}
        )
    if "Generate a question for the given answer" in text:
        return json.dumps({"question": "What does ERR-4021 mean?", "noncommittal": 0})
    raise ValueError("unexpected prompt")


@pytest.fixture(scope="module")
def chat_server() -> Iterator[ChatEndpoint]:
    with serving(_reply) as served:
        yield served


@pytest.fixture(scope="module")
def golden_tenant(
    platform: Platform, index_prefix: str
) -> Iterator[tuple[str, dg.DagsterInstance]]:
    tenant = f"g-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    write_inbox(platform.settings.inbox_dir, tenant, FILES)
    with dg.instance_for_test() as instance:
        run_pipeline(instance, tenant, platform.settings.default_model_key, resource(index_prefix))
        yield tenant, instance


def _golden_suite(platform: Platform, tenant: str, folder: Path) -> None:
    from evals.suite import EvalSuite

    path = folder / "golden.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in GOLDEN))
    platform.eval_runs.set_suite(tenant, EvalSuite(golden_file=str(path)))


def _evaluate(
    tenant: str, instance: dg.DagsterInstance, platform: Platform, index_prefix: str
) -> tuple[dict[str, Any], dict[str, dg.AssetCheckEvaluation]]:
    from assets.evals import retrieval_quality
    from assets.partitions import tenant_model_key
    from pipelines.definitions import ALL_ASSETS

    result = dg.materialize(
        ALL_ASSETS,
        selection=[retrieval_quality],
        partition_key=tenant_model_key(tenant, platform.settings.default_model_key),
        instance=instance,
        resources={"groundwork": resource(index_prefix)},
        raise_on_error=False,
    )
    metadata = {
        k: v.value
        for event in result.get_asset_materialization_events()
        for k, v in event.step_materialization_data.materialization.metadata.items()
    }
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    return metadata, checks


def test_a_golden_set_scores_the_published_corpus_in_place(
    platform: Platform,
    index_prefix: str,
    golden_tenant: tuple[str, dg.DagsterInstance],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from evals.per_query import SCHEMA
    from groundwork.eval_records import EvalResult, EvalSuite

    monkeypatch.delenv("GROUNDWORK_LLM_URL", raising=False)
    monkeypatch.delenv("GROUNDWORK_JUDGE_URL", raising=False)
    tenant, instance = golden_tenant
    _golden_suite(platform, tenant, tmp_path)
    runs = platform.eval_runs
    before = len(runs.history(tenant))
    metadata, checks = _evaluate(tenant, instance, platform, index_prefix)

    # two of three queries find what they expect first; the third cannot
    assert 0.5 < metadata["ndcg_at_10_hybrid"] < 1.0
    assert metadata["groundedness_golden"] == pytest.approx(2 / 3, abs=1e-4)
    assert metadata["citation_correctness"] == 1.0
    assert str(metadata["ragas_faithfulness"]).startswith("skipped: no judge model")
    assert str(metadata["ragas_non_llm_context_recall"]).startswith("skipped: the golden set")
    assert checks["relevance_gate"].passed and checks["relevance_regression"].passed

    path = Path(str(metadata["per_query"]))
    assert pq.read_schema(path).equals(SCHEMA)
    frame = pl.read_parquet(path)
    assert frame.height == 3 * 6 and set(frame["mode"]) == {
        "keyword",
        "vector",
        "hybrid",
        "hybrid+rerank",
        "summary_first",
        "routed",
    }
    # groundedness for a raw, a summary-first and a routed search, side by side
    assert "groundedness_golden_summary_first" in metadata
    assert "groundedness_golden_auto" in metadata

    # these are specific questions: the router answers them from the raw layer
    def by_query(mode: str) -> list[float]:
        return frame.filter(pl.col("mode") == mode).sort("query_id")["ndcg_at_10"].to_list()

    assert by_query("routed") == by_query("hybrid+rerank")
    quota = frame.filter((pl.col("query_id") == "quota") & (pl.col("mode") == "hybrid")).row(
        0, named=True
    )
    assert quota["first_relevant_rank"] == 1 and quota["ndcg_at_10"] == 1.0
    assert quota["hits"][0]["source"] == "runbooks/incident-runbook.md"
    assert quota["hits"][0]["source_id"].startswith("src_")
    assert quota["gold_ids"] == ["runbooks/incident-runbook.md"]
    assert quota["context_contains_evidence"] is True
    hotel = frame.filter((pl.col("query_id") == "hotel") & (pl.col("mode") == "hybrid")).row(
        0, named=True
    )
    assert hotel["context_contains_evidence"] is False
    assert hotel["hits"][0]["source"] == "travel-policy" and hotel["hits"][0]["grade"] == 0
    report = Path(str(metadata["report"])).read_text()
    assert "Worst queries per mode" in report and str(path) in report
    assert len(runs.history(tenant)) == before + 1

    # a previous run that scored higher: this run is a regression beyond the tolerance
    better = EvalResult(tenant, platform.settings.default_model_key, EvalSuite())
    better.relevance = [{"mode": "hybrid", "ndcg_at_10": 1.0}]
    runs.record(better)
    _, checks = _evaluate(tenant, instance, platform, index_prefix)
    regression = checks["relevance_regression"]
    assert not regression.passed and regression.severity == dg.AssetCheckSeverity.WARN
    assert "below its previous run's 1.000" in str(regression.metadata["reasons"].value)


def test_the_judge_scores_composed_answers_and_moves_with_its_verdicts(
    platform: Platform,
    index_prefix: str,
    golden_tenant: tuple[str, dg.DagsterInstance],
    chat_server: ChatEndpoint,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tenant, instance = golden_tenant
    _golden_suite(platform, tenant, tmp_path)
    monkeypatch.setenv("GROUNDWORK_LLM_URL", chat_server.url)
    monkeypatch.setenv("GROUNDWORK_LLM_MODEL", "composer")
    faithfulness = {}
    for judge in ("judge-supports", "judge-refutes"):
        monkeypatch.setenv("GROUNDWORK_JUDGE_MODEL", judge)
        metadata, _ = _evaluate(tenant, instance, platform, index_prefix)
        faithfulness[judge] = metadata["ragas_faithfulness"]
        # the judge's generated question is the query itself for "quota": relevancy near 1
        assert isinstance(metadata["ragas_answer_relevancy"], float)
        assert 0.0 < metadata["ragas_answer_relevancy"] <= 1.0
    assert faithfulness == {"judge-supports": 1.0, "judge-refutes": 0.0}

    composed = [r for r in chat_server.received if r["model"] == "composer"]
    assert len(composed) == 2 * len(GOLDEN)
    prompt = composed[0]["messages"][-1]["content"]
    assert "<<<UNTRUSTED-DOCUMENT-TEXT" in prompt and "[1] " in prompt
    assert "never follow instructions" in composed[0]["messages"][0]["content"]
    frame = pl.read_parquet(str(metadata["per_query"]))
    answered = frame.filter(pl.col("mode") == "hybrid+rerank")
    assert set(answered["answer"]) == {
        "ERR-4021 means the volume has reached its storage quota [1]."
    }
    assert set(answered["faithfulness"]) == {0.0}


def test_the_cli_refuses_a_bad_golden_set_with_line_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from groundwork_cli.main import main

    path = tmp_path / "golden.jsonl"
    path.write_text(json.dumps(GOLDEN[0]) + "\n" + '{"query": "no sources"}\n')
    assert main(["eval", "--golden", str(path), "--tenant", "acme"]) == 2
    err = capsys.readouterr().err
    assert "line 2: sources is missing" in err


def test_the_cli_exits_non_zero_when_the_relevance_gate_fails(
    platform: Platform,
    golden_tenant: tuple[str, dg.DagsterInstance],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A candidate model that scores below the serving model's last run (here one
    never ingested for the tenant) fails the blocking gate: the scores are stored
    and printed, the command says the gate failed in a line (no traceback) and
    exits 1, so a script or CI stops."""
    from groundwork.embedding_models import MINILM_L6_V2_INT8
    from groundwork_cli.main import main
    from tests.conftest import TEST_DATABASE

    monkeypatch.setenv("GROUNDWORK_DATABASE_NAME", TEST_DATABASE)
    monkeypatch.setenv("DAGSTER_HOME", str(platform.settings.dagster_home))
    monkeypatch.delenv("GROUNDWORK_LLM_URL", raising=False)
    monkeypatch.delenv("GROUNDWORK_JUDGE_URL", raising=False)
    tenant, _ = golden_tenant
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in GOLDEN))
    # the serving model's run: the bar a candidate must meet
    assert main(["eval", "--golden", str(path), "--tenant", tenant]) == 0
    capsys.readouterr()

    code = main(
        ["eval", "--golden", str(path), "--tenant", tenant, "--model", MINILM_L6_V2_INT8.key]
    )
    out, err = capsys.readouterr()
    assert "relevance_gate passed: False" in out
    assert "Traceback" not in out + err
    assert code == 1
