"""The learned reranker against the legs, plain RRF, hybrid and hybrid + the
identifier reranker, in sample and out of fold, on SciFact and SQuAD (issue #36).

    GROUNDWORK_HOME=... uv run python bench/reranker_eval.py --cache /tmp/h1/legs \
        [--latency 100] [--identifiers 200]

Replays the legs bench/train_reranker.py recorded (same `--cache`). Columns,
nDCG@10 over sources: `all` every train-split query (in sample for a model
trained on them), `tune` the half the shipped model is trained on, `held-out`
the other half (SciFact odd query ids, SQuAD odd articles: out of fold),
`5-fold` each fifth of the corpus scored by a model trained on the other four
fifths of it. Learned rows: `own` trained on the corpus's tune half alone,
`shipped` the shipped model (both corpora's tune halves). `rerank ms` is the
reranker's own cost per query over the recorded candidates; `--latency N`
times N searches end to end in process (hybrid_search over the engines) with
each reranker, p50 and p95. Kept means: above hybrid and above each leg on
held-out and 5-fold on both corpora.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence

from bench.tenants import eval_home_platform
from bench.train_reranker import (
    Corpus,
    add_arguments,
    candidates_of,
    load_corpora,
    shipped_training,
    training_rows,
)
from evals.fusion_cv import (
    MAX_DEPTH,
    FusionSetting,
    folds_of,
    mrr_by_mode,
    record_legs,
    score_query,
)
from evals.identifiers import identifier_golden
from evals.retrieval import eval_tenant_id
from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import RetrievalPolicy, SearchRequest, hybrid_search
from groundwork.retrieval.learned_rank import LearnedReranker, train
from groundwork.retrieval.rerank import IdentifierReranker, Reranker

PLAIN = RetrievalPolicy(
    rrf_k=60,
    leg_weights=(("vector", 1.0), ("keyword", 1.0)),
    relative_floor=0.0,
    low_confidence_weight=1.0,
)


def mean_score(
    corpus: Corpus,
    indices: Sequence[int],
    legs: Sequence[str] = ("vector", "keyword"),
    reranker: Reranker | None = None,
    policy: RetrievalPolicy | None = None,
) -> float:
    setting = FusionSetting(policy or corpus.policy, MAX_DEPTH)
    return statistics.fmean(
        score_query(corpus.recorded[i], setting, corpus.semantic_floor, legs, reranker)
        for i in indices
    )


def five_fold(corpus: Corpus, score: Callable[[Sequence[int], Sequence[int]], float]) -> float:
    """Mean over queries of each fold scored by what was fit on the others."""
    total = 0.0
    everything = range(len(corpus.recorded))
    for held in folds_of(len(corpus.recorded), 5):
        held_set = set(held)
        total += score([i for i in everything if i not in held_set], held) * len(held)
    return total / len(corpus.recorded)


def learned_on(corpus: Corpus, indices: Sequence[int]) -> LearnedReranker:
    return LearnedReranker(train(training_rows(corpus, indices)))


def rerank_ms(corpus: Corpus, reranker: Reranker) -> float:
    """The reranker's own cost per query (features and scoring), held-out queries."""
    prepared = [
        (
            corpus.recorded[i].interpreted,
            candidates_of(corpus.recorded[i], corpus.semantic_floor, corpus.policy),
        )
        for i in corpus.held_out
    ]
    started = time.perf_counter()
    for query, candidates in prepared:
        reranker.rerank(query, candidates)
    return 1000 * (time.perf_counter() - started) / max(1, len(prepared))


def table(corpora: Sequence[Corpus]) -> None:
    shipped = LearnedReranker(shipped_training(corpora))
    print(
        f"{'lever':34s} {'corpus':8s} {'all':>6s} {'tune':>6s} {'held-out':>8s} "
        f"{'5-fold':>7s} {'rerank ms':>9s}"
    )
    for corpus in corpora:
        corpus_rows(corpus, shipped)


def corpus_rows(corpus: Corpus, shipped: LearnedReranker) -> None:
    everything = list(range(len(corpus.recorded)))
    identifier = IdentifierReranker()
    fixed: list[tuple[str, Sequence[str], Reranker | None, RetrievalPolicy | None]] = [
        ("keyword leg", ("keyword",), None, None),
        ("vector leg", ("vector",), None, None),
        ("plain RRF (k 60, equal)", ("vector", "keyword"), None, PLAIN),
        ("hybrid (shipped constants)", ("vector", "keyword"), None, None),
        ("hybrid + identifier reranker", ("vector", "keyword"), identifier, None),
        ("hybrid + learned (shipped model)", ("vector", "keyword"), shipped, None),
    ]
    for label, legs, reranker, policy in fixed:

        def score(
            ix: Sequence[int],
            legs: Sequence[str] = legs,
            reranker: Reranker | None = reranker,
            policy: RetrievalPolicy | None = policy,
        ) -> float:
            return mean_score(corpus, ix, legs, reranker, policy)

        # nothing is fit for these rows: 5-fold is the mean over all queries,
        # except the shipped model's, fit on the tune half (not out of fold)
        fold = "n/a" if reranker is shipped else f"{score(everything):.3f}"
        ms = f"{rerank_ms(corpus, reranker):.2f}" if reranker is not None else "-"
        print(
            f"{label:34s} {corpus.name:8s} {score(everything):6.3f} {score(corpus.tune):6.3f} "
            f"{score(corpus.held_out):8.3f} {fold:>7s} {ms:>9s}"
        )
    own = learned_on(corpus, corpus.tune)
    in_sample = learned_on(corpus, everything)

    def fold_score(fit: Sequence[int], held: Sequence[int]) -> float:
        return mean_score(corpus, held, reranker=learned_on(corpus, fit))

    print(
        f"{'hybrid + learned (own tune half)':34s} {corpus.name:8s} "
        f"{mean_score(corpus, everything, reranker=in_sample):6.3f} "
        f"{mean_score(corpus, corpus.tune, reranker=own):6.3f} "
        f"{mean_score(corpus, corpus.held_out, reranker=own):8.3f} "
        f"{five_fold(corpus, fold_score):7.3f} {rerank_ms(corpus, own):9.2f}"
    )
    print(
        f"  ({corpus.name}: {len(corpus.recorded)} queries, tune {len(corpus.tune)}, "
        f"held-out {len(corpus.held_out)}; the own-tune row's 'all' is a model fit on all)"
    )


def identifiers(args: argparse.Namespace, count: int, reranker: Reranker) -> None:
    tenant = eval_tenant_id(args.beir)
    with eval_home_platform() as platform:
        engines = platform.search_engines(platform.serving_model(tenant))
        recorded = record_legs(engines, tenant, identifier_golden(args.beir, count))
        setting = FusionSetting(engines.policy, MAX_DEPTH)
        for label, r in (("identifier", IdentifierReranker()), ("learned", reranker)):
            mrr = mrr_by_mode(recorded, setting, engines.vectors.model.semantic_floor, r)
            print(
                f"identifier queries ({len(recorded)}), {label} reranker: MRR@10 "
                + "  ".join(f"{mode} {value:.3f}" for mode, value in mrr.items())
            )


def latency(args: argparse.Namespace, corpus: Corpus, count: int, reranker: Reranker) -> None:
    tenant = eval_tenant_id(args.beir)
    scope = AccessScope(tenant, (f"tenant:{tenant}",))
    queries = [corpus.recorded[i].golden.query for i in corpus.held_out[:count]]
    with eval_home_platform() as platform:
        base = platform.search_engines(platform.serving_model(tenant))
        for label, r in (("identifier", IdentifierReranker()), ("learned", reranker)):
            engines = type(base)(
                **{**{f: getattr(base, f) for f in base.__dataclass_fields__}, "reranker": r}
            )
            for q in queries[:5]:  # warm
                hybrid_search(scope, SearchRequest(q), engines)
            times = []
            for q in queries:
                started = time.perf_counter()
                hybrid_search(scope, SearchRequest(q), engines)
                times.append(1000 * (time.perf_counter() - started))
            times.sort()
            print(
                f"hybrid_search with the {label} reranker, {len(times)} SciFact queries, 1 client: "
                f"p50 {statistics.median(times):.1f} ms, p95 {times[int(0.95 * (len(times) - 1))]:.1f} ms"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--latency", type=int, default=0, help="time N searches end to end")
    parser.add_argument("--identifiers", type=int, default=200)
    args = parser.parse_args()
    corpora = load_corpora(args)
    table(corpora)
    shipped = LearnedReranker()
    if args.identifiers:
        identifiers(args, args.identifiers, shipped)
    if args.latency:
        latency(args, corpora[0], args.latency, shipped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
