"""Per-query results of one eval run as Parquet: one row per (query, mode).

The file is the drill-down behind the report and the artifact a data
engineer loads in a notebook (`polars.read_parquet(path)`); its path is the
asset's metadata. The schema is fixed here, so an empty run still writes a
file with every column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from evals.judge import JudgedAnswer
from evals.retrieval import QueryOutcome

HIT = pa.struct(
    [
        ("rank", pa.int32()),
        ("source", pa.string()),  # as the golden set names it, else the filename stem
        ("source_id", pa.string()),
        ("filename", pa.string()),
        ("grade", pa.int32()),  # 0: not expected
    ]
)
SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("tenant_id", pa.string()),
        ("model_key", pa.string()),
        ("query_id", pa.string()),
        ("query", pa.string()),
        ("mode", pa.string()),
        ("first_relevant_rank", pa.int32()),  # null: no relevant source retrieved
        ("ndcg_at_10", pa.float64()),
        ("recall_at_10", pa.float64()),
        ("recall_at_100", pa.float64()),
        ("mrr_at_10", pa.float64()),
        ("hits", pa.list_(HIT)),
        ("gold_ids", pa.list_(pa.string())),
        # gold evidence inside the budgeted hybrid+rerank context; null: no evidence given
        ("context_contains_evidence", pa.bool_()),
        # answer-level judging (null when not judged): the composed answer and its scores
        ("answer", pa.string()),
        ("faithfulness", pa.float64()),
        ("answer_relevancy", pa.float64()),
    ]
)


def write_per_query(
    path: Path,
    run_id: str,
    tenant_id: str,
    model_key: str,
    outcomes: Sequence[QueryOutcome],
    grounded: Mapping[str, bool],
    answers: Mapping[str, JudgedAnswer],
) -> Path:
    def judged(query_id: str, name: str) -> object:
        answer = answers.get(query_id)
        return getattr(answer, name) if answer is not None else None

    rows = [
        {
            "run_id": run_id,
            "tenant_id": tenant_id,
            "model_key": model_key,
            "query_id": o.query_id,
            "query": o.query,
            "mode": o.mode,
            "first_relevant_rank": o.first_relevant_rank,
            "ndcg_at_10": o.ndcg_at_10,
            "recall_at_10": o.recall_at_10,
            "recall_at_100": o.recall_at_100,
            "mrr_at_10": o.mrr_at_10,
            "hits": [
                {
                    "rank": h.rank,
                    "source": h.source,
                    "source_id": h.source_id,
                    "filename": h.filename,
                    "grade": h.grade,
                }
                for h in o.hits
            ],
            "gold_ids": list(o.gold_ids),
            "context_contains_evidence": grounded.get(o.query_id),
            "answer": judged(o.query_id, "answer"),
            "faithfulness": judged(o.query_id, "faithfulness"),
            "answer_relevancy": judged(o.query_id, "answer_relevancy"),
        }
        for o in outcomes
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)
    return path
