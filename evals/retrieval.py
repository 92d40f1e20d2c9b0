"""Retrieval relevance on a BEIR-format folder, through the real pipeline.

The corpus is ingested as a tenant of its own (one Markdown source per
document, registered and materialized by the Dagster assets), then every
query with judgements runs through the retrieval kernel in each mode and the
ranked chunks are collapsed to documents for nDCG@10, Recall@10/100, MRR@10.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evals.beir import load_corpus, load_qrels, load_queries
from evals.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import SearchEngines, SearchMode, SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found

MODES = ("keyword", "vector", "hybrid", "hybrid+rerank")


@dataclass(frozen=True, slots=True)
class ModeScores:
    mode: str
    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    mrr_at_10: float
    queries: int
    seconds: float


def eval_tenant_id(folder: Path, limit_docs: int | None = None) -> str:
    """One tenant per corpus (and subset); each embedding model is a partition of it."""
    digest = hashlib.sha256(f"{folder.resolve()}|{limit_docs}".encode()).hexdigest()[:10]
    return f"eval-{digest}"


def write_corpus(folder: Path, inbox: Path, tenant_id: str, limit: int | None = None) -> int:
    """One Markdown file per document in the tenant's inbox (unchanged files are skipped by registration)."""
    target = inbox / tenant_id
    target.mkdir(parents=True, exist_ok=True)
    count = 0
    for document in load_corpus(folder, limit=limit):
        path = target / f"{document.doc_id}.md"
        text = document.to_markdown()
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        count += 1
    return count


def evaluate(
    engines: SearchEngines,
    tenant_id: str,
    folder: Path,
    split: str,
    modes: Sequence[str] = MODES,
    max_queries: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    corpus_ids: set[str] | None = None,
) -> list[ModeScores]:
    """`corpus_ids`: the documents the tenant holds (a subset of the folder);
    queries none of whose relevant documents are held are left out."""
    queries = load_queries(folder)
    qrels = load_qrels(folder, split)
    judged = [
        q for q in qrels if q in queries and (corpus_ids is None or set(qrels[q]) & corpus_ids)
    ][:max_queries]
    scope = AccessScope(tenant_id, (f"tenant:{tenant_id}",))
    results: list[ModeScores] = []
    for mode in modes:
        search_mode = SearchMode.HYBRID if mode.startswith("hybrid") else SearchMode(mode)
        mode_engines = engines if mode == "hybrid+rerank" else replace(engines, reranker=None)
        ndcg, r10, r100, mrr = [], [], [], []
        started = time.monotonic()
        for n, query_id in enumerate(judged, start=1):
            request = SearchRequest(queries[query_id], limit=100, candidates=100, mode=search_mode)
            outcome = hybrid_search(scope, request, mode_engines)
            ranked: list[str] = []
            if isinstance(outcome, Found):
                for hit in outcome.hits:
                    doc = hit.chunk.filename.rsplit(".", 1)[0]
                    if doc not in ranked:
                        ranked.append(doc)
            relevant = qrels[query_id]
            ndcg.append(ndcg_at_k(ranked, relevant, 10))
            r10.append(recall_at_k(ranked, relevant, 10))
            r100.append(recall_at_k(ranked, relevant, 100))
            mrr.append(mrr_at_k(ranked, relevant, 10))
            if progress:
                progress(mode, n, len(judged))
        results.append(
            ModeScores(
                mode=mode,
                ndcg_at_10=statistics.mean(ndcg) if ndcg else 0.0,
                recall_at_10=statistics.mean(r10) if r10 else 0.0,
                recall_at_100=statistics.mean(r100) if r100 else 0.0,
                mrr_at_10=statistics.mean(mrr) if mrr else 0.0,
                queries=len(judged),
                seconds=time.monotonic() - started,
            )
        )
    return results


def format_table(model_key: str, scores: Sequence[ModeScores] | Sequence[dict[str, Any]]) -> str:
    lines = [
        f"model {model_key}",
        "mode            nDCG@10  R@10   R@100  MRR@10  queries  seconds",
    ]
    for row in scores:
        s = row if isinstance(row, ModeScores) else ModeScores(**row)
        lines.append(
            f"{s.mode:15s} {s.ndcg_at_10:7.3f}  {s.recall_at_10:5.3f}  {s.recall_at_100:5.3f}  "
            f"{s.mrr_at_10:6.3f}  {s.queries:7d}  {s.seconds:7.1f}"
        )
    return "\n".join(lines)
