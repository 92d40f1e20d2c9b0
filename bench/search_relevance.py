"""nDCG@10 of the search service over the benchmark database's BEIR tenant,
through the path /v1/search takes (groundwork.services.retrieval.search on the
tenant's walled view, as the API's handler calls it), without ingesting.

    uv run python bench/search_relevance.py [--beir ../shared/data/scifact] [--split train]

For serving changes (caches, query plans, engine settings) that must leave the
ranking alone: run it before and after on the same database; the figures must
agree. Needs `bench/ingest_and_search.py --beir ...` first. With the query
cache on, every query is asked twice and both answers must be the same.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from bench.tenants import add_corpus_arguments, bench_tenant, connect_bench_database  # noqa: E402
from evals.beir import load_qrels, load_queries  # noqa: E402
from evals.metrics import ndcg_at_k  # noqa: E402
from groundwork.services import retrieval  # noqa: E402


def ranked_documents(result: retrieval.SearchResult) -> list[str]:
    ranked: list[str] = []
    for issued in result.hits:
        doc = issued.hit.chunk.filename.rsplit(".", 1)[0]
        if doc not in ranked:
            ranked.append(doc)
    return ranked


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpus_arguments(parser)
    args = parser.parse_args()
    if not args.beir.exists():
        print(f"no BEIR data at {args.beir}")
        return 1
    platform = connect_bench_database(serving=True)
    try:
        tenant = bench_tenant(platform.catalog, args.tenant)
        if tenant is None:
            print("no benchmark corpus: run bench/ingest_and_search.py --beir ... first")
            return 1
        _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "relevance")
        who = platform.catalog.principal_for_key(key)
        assert who is not None
        view = platform.for_tenant(tenant)
        queries = load_queries(args.beir)
        qrels = load_qrels(args.beir, args.split)
        scores: list[float] = []
        differing = 0
        started = time.perf_counter()
        for query_id, relevant in qrels.items():
            query = retrieval.SearchQuery(queries[query_id], limit=10)
            first = ranked_documents(retrieval.search(view, who, query))
            again = ranked_documents(retrieval.search(view, who, query))
            differing += first != again
            scores.append(ndcg_at_k(first, relevant, 10))
        print(
            f"tenant {tenant}: hybrid + reranker nDCG@10 {statistics.mean(scores):.4f} over "
            f"{len(scores)} {args.split} queries; asked twice, {differing} answered differently "
            f"({time.perf_counter() - started:.0f} s)"
        )
    finally:
        platform.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
