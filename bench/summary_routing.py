"""Routed search (layer=auto) beside hybrid, hybrid + reranker and
summary-first on eval tenants, in one run, per split (issue #36).

    uv run python bench/summary_routing.py --tenant eval-79d4d24385 --part held-out
    uv run python bench/summary_routing.py --tenant eval-... --part tune --features

Reads each tenant's own eval suite (set by `groundwork eval --beir/--squad/
--golden`) and scores it over the published corpus in place. `--part` picks
the queries: `tune` is what the router's rules may be chosen on, `held-out`
what they are reported on. A BEIR suite: held-out is its test split (SciFact's
300 unseen queries) when the folder has `qrels/test.tsv`; without it, the
train split's odd query ids (tune: the even ones). A SQuAD suite: articles by
parity (even tune, odd held-out: questions about one article never straddle
the halves). A hand-written golden set is scored whole; it was never tuned on.
`--features` prints, per query shape the router reads, how summary-first did
against hybrid + reranker. `--overview` (a SQuAD suite) asks one broad
question per article instead ("Give me an overview of <title>", every
paragraph of the article relevant). Figures on a busy machine: the timings are noisy,
the scores are not.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from bench.tenants import eval_home_platform, eval_suite
from evals.golden import GoldenQuery
from evals.retrieval import QueryOutcome, evaluate_golden
from evals.suite import suite_golden
from groundwork.eval_records import EvalSuite
from groundwork.retrieval.query import interpret
from groundwork.retrieval.routing import route_query

MODES = ("hybrid", "hybrid+rerank", "summary_first", "routed")


def suite_part(suite: EvalSuite, part: str) -> tuple[list[GoldenQuery], str]:
    """The suite's queries of one part (see the module's docstring)."""
    beir = bool(suite.beir_folder) and not suite.squad_file and not suite.golden_file
    golden, dataset = suite_golden(replace(suite, split="train") if beir else suite)
    if part == "all":
        return golden, f"{dataset} (whole)"
    wanted = 0 if part == "tune" else 1
    if suite.squad_file:
        golden = [q for q in golden if int(next(iter(q.sources)).split("-")[0]) % 2 == wanted]
        return golden, f"{dataset} {part} (articles by parity)"
    if not beir:
        return golden, f"{dataset} (whole: a hand-written set is never tuned on)"
    if part == "held-out" and (Path(suite.beir_folder) / "qrels" / "test.tsv").is_file():
        golden, dataset = suite_golden(replace(suite, split="test"))
        return golden, f"{dataset} test split"
    # no test split on this machine: the train split's queries by id parity
    golden = [q for q in golden if int(q.query_id) % 2 == wanted]
    return golden, f"{dataset} train split, {'even' if wanted == 0 else 'odd'} query ids"


def overview_queries(golden: Sequence[GoldenQuery]) -> list[GoldenQuery]:
    """A SQuAD suite's broad questions, one per article: an overview of it,
    every paragraph of the article relevant (what summary-first is for)."""
    by_article: dict[str, dict[str, int]] = defaultdict(dict)
    titles: dict[str, str] = {}
    for q in golden:
        source = next(iter(q.sources))
        article = source.split("-")[0]
        by_article[article][source] = 1
        titles[article] = next((t.split("\n\n")[0] for _, t in q.passages), article)
    return [
        GoldenQuery(f"overview-{a}", f"Give me an overview of {titles[a]}", sources)
        for a, sources in sorted(by_article.items(), key=lambda item: int(item[0]))
    ]


def query_shape(query: str) -> str:
    """What the router reads, as a bucket: question or not, content words."""
    interpreted = interpret(query)
    words = interpreted.other_words
    size = str(words) if words <= 3 else "4-6" if words <= 6 else "7+"
    kind = "question" if query.rstrip().endswith("?") else "statement"
    return f"{kind:9s} {size:>3s} words" + (" +code" if interpreted.codes else "")


def print_scores(label: str, outcomes: Sequence[QueryOutcome]) -> None:
    by_mode: dict[str, list[float]] = defaultdict(list)
    for o in outcomes:
        by_mode[o.mode].append(o.ndcg_at_10)
    queries = len(by_mode[MODES[0]])
    print(f"{label}: {queries} queries, nDCG@10")
    print("  " + "  ".join(f"{m:>13s}" for m in MODES))
    print("  " + "  ".join(f"{statistics.mean(by_mode[m]) if queries else 0:13.3f}" for m in MODES))
    routed = [route_query(o.query) for o in outcomes if o.mode == MODES[0]]
    reasons: dict[str, int] = defaultdict(int)
    for route in routed:
        reasons[f"{route.layer} ({route.reason})"] += 1
    print("  routes: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())))


def print_features(outcomes: Sequence[QueryOutcome]) -> None:
    per: dict[str, dict[str, float]] = defaultdict(dict)
    for o in outcomes:
        per[o.query_id][o.mode] = o.ndcg_at_10
        per[o.query_id]["query"] = 0.0
    shapes: dict[str, list[float]] = defaultdict(list)
    queries = {o.query_id: o.query for o in outcomes}
    for query_id, scores in per.items():
        shapes[query_shape(queries[query_id])].append(
            scores["summary_first"] - scores["hybrid+rerank"]
        )
    print(
        "  query shape                 queries  summary_first - hybrid+rerank (mean, wins/losses)"
    )
    for shape, deltas in sorted(shapes.items()):
        wins = sum(1 for d in deltas if d > 0)
        losses = sum(1 for d in deltas if d < 0)
        print(f"  {shape:27s} {len(deltas):7d}  {statistics.mean(deltas):+.3f} ({wins}/{losses})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenant", action="append", required=True, help="an eval tenant")
    parser.add_argument("--part", default="held-out", choices=("tune", "held-out", "all"))
    parser.add_argument("--features", action="store_true")
    parser.add_argument(
        "--overview", action="store_true", help="a SQuAD suite: one overview query per article"
    )
    parser.add_argument("--max-queries", type=int)
    args = parser.parse_args()
    with eval_home_platform() as platform:
        for tenant_id in args.tenant:
            suite = eval_suite(platform, tenant_id)
            if suite is None:
                return 2
            golden, dataset = suite_part(suite, args.part)
            if args.overview:
                golden, dataset = overview_queries(golden), f"{dataset}, one overview per article"
            golden = golden[: args.max_queries]
            engines = platform.search_engines(platform.serving_model(tenant_id))
            _, outcomes = evaluate_golden(engines, tenant_id, golden, MODES)
            print_scores(f"{tenant_id} {dataset}", outcomes)
            if args.features:
                print_features(outcomes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
