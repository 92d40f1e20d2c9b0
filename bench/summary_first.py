"""Summary-first search against raw-chunk search on an eval tenant, with the
number of sources the summary layer hands on varied.

    uv run python bench/summary_first.py --tenant eval-79d4d24385 [--sources 5,10,20,50]

Reads the tenant's own eval suite (set by `groundwork eval --beir/--squad`),
so it scores the same golden set the eval does, over the published corpus, in
place (nothing is ingested). Prints nDCG@10, R@10 and MRR@10 for raw hybrid +
reranker, the summary layer alone (summary pages collapsed to sources), and
summary_first at each source count. Figures on a busy machine: the timings are
noisy, the scores are not.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from evals.metrics import mrr_at_k, ndcg_at_k, recall_at_k  # noqa: E402
from evals.retrieval import ranked_sources  # noqa: E402
from evals.suite import suite_golden  # noqa: E402
from groundwork.ports import AccessScope  # noqa: E402
from groundwork.retrieval.kernel import SearchRequest  # noqa: E402
from groundwork.retrieval.layers import layered_search  # noqa: E402
from groundwork.retrieval.outcome import Found  # noqa: E402
from resources.composition.platform import connect, ensure_engines  # noqa: E402
from resources.composition.settings import GroundworkSettings  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenant", required=True, help="an eval tenant (eval-...)")
    parser.add_argument("--sources", default="5,10,20,50")
    parser.add_argument("--max-queries", type=int)
    args = parser.parse_args()
    settings = GroundworkSettings.from_env()
    platform = connect(settings, ensure_engines(settings))
    try:
        suite = platform.eval_runs.suite(args.tenant)
        if suite is None:
            print(f"{args.tenant} has no eval suite", file=sys.stderr)
            return 2
        golden, dataset = suite_golden(suite)
        golden = golden[: args.max_queries or suite.max_queries]
        engines = platform.search_engines(platform.serving_model(args.tenant))
        scope = AccessScope(args.tenant, (f"tenant:{args.tenant}",))
        variants: list[tuple[str, str, int]] = [("raw hybrid+rerank", "raw", 10)]
        variants.append(("summary layer alone", "summary", 10))
        variants += [
            (f"summary_first, {n} sources", "summary_first", n)
            for n in (int(x) for x in args.sources.split(","))
        ]
        print(f"{args.tenant} ({dataset}): {len(golden)} queries")
        print("search                         nDCG@10  R@10   MRR@10  seconds")
        for label, layer, sources in variants:
            started = time.monotonic()
            ndcg, r10, mrr = [], [], []
            for item in golden:
                outcome = layered_search(
                    scope,
                    SearchRequest(item.query, limit=100, candidates=100),
                    engines,
                    layer,
                    sources=sources,
                )
                hits = outcome.hits if isinstance(outcome, Found) else ()
                ranked = [r.source for r in ranked_sources(hits, item)]
                relevant = dict(item.sources)
                ndcg.append(ndcg_at_k(ranked, relevant, 10))
                r10.append(recall_at_k(ranked, relevant, 10))
                mrr.append(mrr_at_k(ranked, relevant, 10))
            print(
                f"{label:30s} {statistics.mean(ndcg):7.3f}  {statistics.mean(r10):5.3f}  "
                f"{statistics.mean(mrr):6.3f}  {time.monotonic() - started:7.1f}"
            )
    finally:
        platform.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
