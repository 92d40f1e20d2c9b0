"""Where the 2,000-token context's budget goes, and groundedness (the gold
evidence inside it) for each way of spending it, on an eval tenant's split
(issue #36).

    uv run python bench/context_budget.py --tenant eval-79d4d24385 --part tune

Each query is searched once (hybrid + reranker, 30 hits, as `/v1/context`
and the eval search); every variant selects from the same hits, so the
figures differ only by the selection. Each evidence item the selection missed
is put in one place: its document not among the hits, among the hits but
none of its chunks selected, or selected without the span (the span in
another chunk that was not taken, or cut by a chunk boundary). `--part` as in
bench/summary_routing.py; choose on `tune`, report `held-out`.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable

from bench.summary_routing import suite_part
from bench.tenants import eval_home_platform, eval_suite
from evals.grounding import _inside, _words
from evals.retrieval import source_name
from groundwork.ports import AccessScope
from groundwork.retrieval.context import ContextSelection, context_terms, select_context
from groundwork.retrieval.kernel import SearchRequest
from groundwork.retrieval.layers import layered_search
from groundwork.retrieval.outcome import ChunkView, Found, Hit

Selector = Callable[[tuple[Hit, ...]], ContextSelection]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenant", required=True)
    parser.add_argument("--part", default="tune", choices=("tune", "held-out", "all"))
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--max-queries", type=int)
    args = parser.parse_args()
    with eval_home_platform() as platform:
        suite = eval_suite(platform, args.tenant)
        if suite is None:
            return 2
        golden, dataset = suite_part(suite, args.part)
        golden = [q for q in golden if q.evidence][: args.max_queries]
        engines = platform.search_engines(platform.serving_model(args.tenant))
        scope = AccessScope(args.tenant, (f"tenant:{args.tenant}",))
        sections: dict[str, list[ChunkView]] = {}

        def section(view: ChunkView) -> list[ChunkView]:
            if view.chunk_id not in sections:
                sections[view.chunk_id] = engines.reader.section(scope, view.chunk_id)
            return sections[view.chunk_id]

        count = engines.embedder.count_tokens
        variants: dict[str, Selector] = {
            "current": lambda hits: select_context(
                hits, args.budget, count, per_source_cap=3, load_section=section
            ),
            "no expansion": lambda hits: select_context(hits, args.budget, count, 3),
        }

        def capped(cap: int) -> Selector:
            return lambda hits: select_context(hits, args.budget, count, cap, section)

        variants["per-source cap 1"] = capped(1)
        variants["per-source cap 2"] = capped(2)
        terms: frozenset[str] = frozenset()
        variants["sentence fill"] = lambda hits: select_context(
            hits, args.budget, count, 3, section, query_terms=terms
        )
        variants["sentence fill, no expansion"] = lambda hits: select_context(
            hits, args.budget, count, 3, query_terms=terms
        )
        grounded: Counter[str] = Counter()
        misses: dict[str, Counter[str]] = {name: Counter() for name in variants}
        used: Counter[str] = Counter()
        items = 0
        for item in golden:
            outcome = layered_search(
                scope, SearchRequest(item.query, limit=30, candidates=100), engines, "raw"
            )
            hits = outcome.hits if isinstance(outcome, Found) else ()
            terms = context_terms(item.query)
            for name, select in variants.items():
                selection = select(hits)
                used[name] += selection.used_tokens
                chosen = [c for entry in selection.items for c in entry.chunks]
                words = _words("\n\n".join(c.body for c in chosen))
                for ref, spans in item.evidence:
                    wanted = (ref,) if ref else item.relevant
                    if any(_inside(span, words) for span in spans):
                        grounded[name] += 1
                    elif not any(source_name(h.chunk, wanted) in wanted for h in hits):
                        misses[name]["document not in hits"] += 1
                    elif not any(source_name(c, wanted) in wanted for c in chosen):
                        misses[name]["document in hits, not selected"] += 1
                    else:
                        misses[name]["selected, span not in it"] += 1
            items += len(item.evidence)
        print(f"{args.tenant} {dataset}: {len(golden)} queries, {items} evidence items")
        for name in variants:
            print(
                f"  {name:28s} groundedness {grounded[name] / max(items, 1):.3f} "
                f"({grounded[name]}/{items}), mean tokens {used[name] / max(len(golden), 1):.0f}; "
                + ", ".join(f"{k} {v}" for k, v in misses[name].most_common())
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
