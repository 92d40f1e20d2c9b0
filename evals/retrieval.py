"""Retrieval relevance on a golden set, through the real pipeline.

Every golden query runs through the retrieval kernel in each mode over the
tenant's published corpus; the ranked chunks are collapsed to sources (named
as the golden set names them) for nDCG@10, Recall@10/100 and MRR@10, and each
query's outcome is kept for the drill-down (rank of the first relevant
source, what was retrieved beside what was expected).

A BEIR folder is scored the same way, converted into a golden set first; its
corpus is ingested as a tenant of its own (one Markdown source per document,
so a document id is its source's filename stem).
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evals.beir import load_corpus
from evals.golden import GoldenQuery
from evals.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import SearchEngines, SearchMode, SearchRequest
from groundwork.retrieval.layers import layered_search
from groundwork.retrieval.outcome import ChunkView, Found, Hit

#: summary_first: the summary layer picks the sources, their raw chunks answer (hybrid +
#: reranker, as /v1/search with layer=summary_first); compare it with hybrid+rerank.
#: routed: each query to summary_first or hybrid+rerank as the router says (layer=auto)
MODES = ("keyword", "vector", "hybrid", "hybrid+rerank", "summary_first", "routed")
#: the layer each mode searches (the rest: raw)
MODE_LAYERS = {"summary_first": "summary_first", "routed": "auto"}
SINGLE_LEGS = ("keyword", "vector")
KEPT_HITS = 10  # per query and mode in the drill-down: what nDCG@10 looked at


@dataclass(frozen=True, slots=True)
class ModeScores:
    mode: str
    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    mrr_at_10: float
    queries: int
    seconds: float


@dataclass(frozen=True, slots=True)
class RetrievedSource:
    rank: int  # among sources, from 1
    source: str  # the golden set's name for it when it names it, else the filename stem
    source_id: str
    filename: str
    grade: int  # 0 when the golden set does not expect it


@dataclass(frozen=True, slots=True)
class QueryOutcome:
    """One golden query in one mode."""

    query_id: str
    query: str
    mode: str
    first_relevant_rank: int | None  # among sources; None when no relevant source came back
    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    mrr_at_10: float
    hits: tuple[RetrievedSource, ...]  # the top KEPT_HITS sources
    gold_ids: tuple[str, ...]  # expected sources with a grade above 0


def stem(filename: str) -> str:
    return filename.rsplit(".", 1)[0]


def source_names(chunk: ChunkView) -> tuple[str, str, str]:
    """The names a golden set may use for a chunk's source: id, filename, stem."""
    return chunk.source_id, chunk.filename, stem(chunk.filename)


def source_name(chunk: ChunkView, wanted: Sequence[str]) -> str:
    names = source_names(chunk)
    for ref in wanted:
        if ref in names:
            return ref
    return stem(chunk.filename)


def ranked_sources(hits: Sequence[Hit], golden: GoldenQuery) -> list[RetrievedSource]:
    ranked: list[RetrievedSource] = []
    seen: set[str] = set()
    for hit in hits:
        name = source_name(hit.chunk, tuple(golden.sources))
        if name in seen:
            continue
        seen.add(name)
        ranked.append(
            RetrievedSource(
                rank=len(ranked) + 1,
                source=name,
                source_id=hit.chunk.source_id,
                filename=hit.chunk.filename,
                grade=golden.sources.get(name, 0),
            )
        )
    return ranked


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


def evaluate_golden(
    engines: SearchEngines,
    tenant_id: str,
    golden: Sequence[GoldenQuery],
    modes: Sequence[str] = MODES,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[list[ModeScores], list[QueryOutcome]]:
    """Aggregates per mode, and every query's outcome in every mode. The
    tenant is searched as a member sees it (`tenant:<id>`)."""
    scope = AccessScope(tenant_id, (f"tenant:{tenant_id}",))
    results: list[ModeScores] = []
    outcomes: list[QueryOutcome] = []
    for mode in modes:
        search_mode = SearchMode(mode) if mode in SINGLE_LEGS else SearchMode.HYBRID
        reranked = mode in ("hybrid+rerank", *MODE_LAYERS)
        mode_engines = engines if reranked else replace(engines, reranker=None)
        layer = MODE_LAYERS.get(mode, "raw")
        ndcg, r10, r100, mrr = [], [], [], []
        started = time.monotonic()
        for n, item in enumerate(golden, start=1):
            request = SearchRequest(item.query, limit=100, candidates=100, mode=search_mode)
            outcome = layered_search(scope, request, mode_engines, layer)
            retrieved = ranked_sources(outcome.hits, item) if isinstance(outcome, Found) else []
            ranked = [r.source for r in retrieved]
            relevant = dict(item.sources)
            scores = (
                ndcg_at_k(ranked, relevant, 10),
                recall_at_k(ranked, relevant, 10),
                recall_at_k(ranked, relevant, 100),
                mrr_at_k(ranked, relevant, 10),
            )
            ndcg.append(scores[0])
            r10.append(scores[1])
            r100.append(scores[2])
            mrr.append(scores[3])
            first = next((r.rank for r in retrieved if r.grade > 0), None)
            outcomes.append(
                QueryOutcome(
                    item.query_id,
                    item.query,
                    mode,
                    first,
                    *scores,
                    hits=tuple(retrieved[:KEPT_HITS]),
                    gold_ids=item.relevant,
                )
            )
            if progress:
                progress(mode, n, len(golden))
        results.append(
            ModeScores(
                mode=mode,
                ndcg_at_10=statistics.mean(ndcg) if ndcg else 0.0,
                recall_at_10=statistics.mean(r10) if r10 else 0.0,
                recall_at_100=statistics.mean(r100) if r100 else 0.0,
                mrr_at_10=statistics.mean(mrr) if mrr else 0.0,
                queries=len(golden),
                seconds=time.monotonic() - started,
            )
        )
    return results, outcomes


def evaluate(
    engines: SearchEngines,
    tenant_id: str,
    folder: Path,
    split: str,
    modes: Sequence[str] = MODES,
    max_queries: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    limit_docs: int | None = None,
) -> list[ModeScores]:
    """A BEIR folder's split, scored through its golden-set conversion."""
    from evals.evidence import beir_golden

    golden = beir_golden(folder, split, limit_docs=limit_docs)[:max_queries]
    return evaluate_golden(engines, tenant_id, golden, modes, progress)[0]


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
