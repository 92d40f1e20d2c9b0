"""The BEIR evaluation runs through the real pipeline on a tiny BEIR folder built here."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import dagster as dg

from evals.retrieval import MODES, evaluate, write_corpus
from resources.platform import Platform
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
