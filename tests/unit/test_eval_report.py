"""The per-query Parquet file (schema, content, read back with polars) and the
report built from it: worst queries, hybrid losses, readable charts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from evals.judge import JudgedAnswer
from evals.per_query import SCHEMA, write_per_query
from evals.report import render_report, value_axis
from evals.retrieval import QueryOutcome, RetrievedSource


def _outcome(query_id: str, mode: str, ndcg: float, first: int | None) -> QueryOutcome:
    hits = (
        RetrievedSource(1, "other", "src_o", "other.md", 0),
        RetrievedSource(2, "wanted.md", "src_w", "wanted.md", 2),
    )
    return QueryOutcome(
        query_id, f"query {query_id}", mode, first, ndcg, ndcg, ndcg, ndcg, hits, ("wanted.md",)
    )


def _file(tmp_path: Path) -> Path:
    outcomes = [
        _outcome("q1", "keyword", 1.0, 1),
        _outcome("q1", "vector", 0.5, 2),
        _outcome("q1", "hybrid", 0.6, 2),  # lost to keyword by 0.4
        _outcome("q1", "hybrid+rerank", 0.63, 2),
        _outcome("q2", "keyword", 0.0, None),
        _outcome("q2", "vector", 0.2, 5),
        _outcome("q2", "hybrid", 0.4, 3),
        _outcome("q2", "hybrid+rerank", 0.4, 3),
    ]
    answers = {"q1": JudgedAnswer("q1", "It is full [1].", 0.5, 0.9)}
    return write_per_query(
        tmp_path / "evr_1.parquet",
        "evr_1",
        "acme",
        "bge",
        outcomes,
        {"q1": True, "q2": False},
        answers,
    )


def test_the_per_query_file_has_the_documented_schema_and_rows(tmp_path: Path) -> None:
    path = _file(tmp_path)
    assert pq.read_schema(path).equals(SCHEMA)
    for column in (
        "query",
        "mode",
        "first_relevant_rank",
        "ndcg_at_10",
        "hits",
        "gold_ids",
        "context_contains_evidence",
        "faithfulness",
    ):
        assert column in SCHEMA.names
    frame = pl.read_parquet(path)
    assert frame.height == 8
    row = frame.filter((pl.col("query_id") == "q2") & (pl.col("mode") == "keyword")).row(
        0, named=True
    )
    assert row["first_relevant_rank"] is None and row["context_contains_evidence"] is False
    assert row["hits"][1] == {
        "rank": 2,
        "source": "wanted.md",
        "source_id": "src_w",
        "filename": "wanted.md",
        "grade": 2,
    }
    assert row["gold_ids"] == ["wanted.md"] and row["faithfulness"] is None
    judged = frame.filter(pl.col("query_id") == "q1")["faithfulness"].unique().to_list()
    assert judged == [0.5]
    # an empty run still writes every column
    empty = write_per_query(tmp_path / "empty.parquet", "evr_2", "acme", "bge", [], {}, {})
    assert pq.read_schema(empty).equals(SCHEMA)


@dataclass(frozen=True)
class _Run:
    run_id: str
    model_key: str
    results: dict[str, Any]
    ndcg_hybrid: float | None
    created_at: datetime


def _relevance(hybrid: float) -> list[dict[str, Any]]:
    return [
        {
            "mode": m,
            "ndcg_at_10": v,
            "recall_at_10": v,
            "recall_at_100": v,
            "mrr_at_10": v,
            "queries": 2,
            "seconds": 0.1,
        }
        for m, v in (
            ("keyword", 0.694),
            ("vector", 0.70),
            ("hybrid", hybrid),
            ("hybrid+rerank", 0.75),
        )
    ]


def test_the_report_drills_down_and_draws_readable_charts(tmp_path: Path) -> None:
    path = _file(tmp_path)
    now = datetime(2026, 5, 1, tzinfo=UTC)
    older = _Run("evr_0", "bge", {"relevance": _relevance(0.74)}, 0.74, now - timedelta(days=1))
    latest = _Run(
        "evr_1",
        "bge",
        {
            "relevance": _relevance(0.723),
            "per_query_path": str(path),
            "answers": {
                "samples": 1,
                "judge": "j",
                "metrics": {"faithfulness": 0.5},
                "skipped": {},
            },
        },
        0.723,
        now,
    )
    html = render_report("acme", [latest, older], 0.02, serving_model="bge")
    # the drill-down: worst queries with retrieved beside expected, and hybrid's losses
    assert "Worst queries per mode" in html and "2. wanted.md ✓2" in html
    assert "Queries where hybrid lost to a single leg (1)" in html
    lost = html[html.index("hybrid lost") :]
    assert "query q1" in lost and "0.400" in lost and "query q2" not in lost.split("</table>")[0]
    assert "Groundedness (b)" in html and "It is full [1]." in html
    # values are printed on bars and points; the axis does not start at 0
    assert ">0.694<" in html and ">0.723<" in html and "axis starts at" in html
    assert "gate band" in html and "regression band" in html
    assert len(re.findall(r"<circle", html)) == 2  # both stored runs plotted


def test_the_axis_shows_the_differences_that_matter() -> None:
    lo, hi = value_axis([0.694, 0.723])
    assert 0.55 <= lo <= 0.65 and 0.75 <= hi <= 0.8
    assert value_axis([]) == (0.0, 1.0)
    lo, hi = value_axis([1.0, 1.0])
    assert hi == 1.0 and hi - lo >= 0.1 - 1e-9
