"""Train the learned reranker (groundwork/retrieval/learned_rank.py) from the
train splits and write the shipped model (issue #36).

    GROUNDWORK_HOME=... uv run python bench/train_reranker.py \
        [--beir ../shared/data/scifact] [--squad ../shared/data/squad/dev-v1.1-part-a.json] \
        [--cache /tmp/h1/legs] [--out groundwork/retrieval/models/learned_rank.json]

Reads the eval tenants `groundwork eval --beir FOLDER --split train` and
`groundwork eval --squad FILE` ingested under GROUNDWORK_HOME, records both
legs once per query (evals.fusion_cv.record_legs; `--cache` keeps the
recording so training and `bench/reranker_eval.py` replay it offline), and
trains on the tuning halves only: SciFact's train split with even query ids
(this machine's copy has no test split, so the odd ids are the held-out
queries, as bench/summary_routing.py), SQuAD's articles with even numbers
(the odd articles held out: questions on one article never straddle the
halves). No randomness: the same recording gives the same bytes.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.tenants import SCIFACT, eval_home_platform
from evals.fusion_cv import MAX_DEPTH, RecordedQuery, record_legs
from evals.golden import GoldenQuery
from evals.retrieval import eval_tenant_id, source_name
from evals.suite import suite_golden
from groundwork.retrieval.kernel import (
    RetrievalPolicy,
    rank_candidates,
    rerank_candidates,
    vector_leg,
)
from groundwork.retrieval.learned_rank import (
    SHIPPED_MODEL,
    LinearRankModel,
    TrainingQuery,
    train,
    training_query,
)
from groundwork.retrieval.rerank import RerankCandidate

SQUAD = SCIFACT.parent / "squad" / "dev-v1.1-part-a.json"


@dataclass(frozen=True, slots=True)
class Corpus:
    """One corpus's recorded train-split queries and the parts they fall in."""

    name: str
    recorded: list[RecordedQuery]
    tune: list[int]  # indices into recorded
    held_out: list[int]
    semantic_floor: float
    policy: RetrievalPolicy


def part_of(name: str, golden: GoldenQuery) -> int:
    """0 tune, 1 held-out: SciFact by query id parity, SQuAD by article parity."""
    if name == "squad":
        return int(next(iter(golden.sources)).split("-")[0]) % 2
    return int(golden.query_id) % 2


#: bumped when RecordedQuery's fields change, so an older cache is recorded again
#: rather than unpickled into the wrong shape
RECORDING_FORMAT = 2


def record_corpus(name: str, tenant: str, cache: Path | None, most: int) -> Corpus:
    """The corpus's legs, from the cache when it holds them. A set of more than
    `most` queries is thinned to every n-th (SQuAD's half has 5,696 questions:
    recording them all takes longer than training needs), the same each run."""
    cached = cache / f"{name}-{tenant}-{most}-v{RECORDING_FORMAT}.pickle" if cache else None
    with eval_home_platform() as platform:
        suite = platform.eval_runs.suite(tenant)
        if suite is None:
            raise SystemExit(f"no eval tenant {tenant} for {name}: run `groundwork eval` first")
        model_key = platform.serving_model(tenant)
        engines = platform.search_engines(model_key)
        floor = engines.vectors.model.semantic_floor
        policy = engines.policy
        if cached is not None and cached.is_file():
            recorded: list[RecordedQuery] = pickle.loads(cached.read_bytes())
        else:
            golden, _ = suite_golden(suite)
            golden = golden[:: -(-len(golden) // most)] if len(golden) > most else golden
            recorded = record_legs(engines, tenant, golden, MAX_DEPTH)
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                cached.write_bytes(pickle.dumps(recorded))
    parts = [part_of(name, r.golden) for r in recorded]
    return Corpus(
        name,
        recorded,
        [i for i, p in enumerate(parts) if p == 0],
        [i for i, p in enumerate(parts) if p == 1],
        floor,
        policy,
    )


def candidates_of(
    recorded: RecordedQuery, floor: float, policy: RetrievalPolicy
) -> list[RerankCandidate]:
    """What the kernel's reranker would be handed for this query (full depth)."""
    legs = {
        "vector": vector_leg(recorded.vector[:MAX_DEPTH], floor),
        "keyword": recorded.keyword_ids(MAX_DEPTH),
    }
    return rerank_candidates(
        rank_candidates(legs, recorded.views, policy), recorded.leg_scores(MAX_DEPTH)
    )


def training_rows(corpus: Corpus, indices: Sequence[int]) -> list[TrainingQuery]:
    rows = []
    for i in indices:
        r = corpus.recorded[i]
        wanted = tuple(r.golden.sources)
        relevance = {
            chunk_id: float(r.golden.sources.get(source_name(view, wanted), 0))
            for chunk_id, view in r.views.items()
        }
        rows.append(
            training_query(
                r.interpreted, candidates_of(r, corpus.semantic_floor, corpus.policy), relevance
            )
        )
    return rows


def shipped_training(corpora: Sequence[Corpus]) -> LinearRankModel:
    """The shipped model: every corpus's tuning half, nothing held out."""
    rows = [q for c in corpora for q in training_rows(c, c.tune)]
    label = ", ".join(f"{c.name} tune ({len(c.tune)} queries)" for c in corpora)
    return train(rows, trained_on=label)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--beir", type=Path, default=SCIFACT)
    parser.add_argument("--squad", type=Path, default=SQUAD)
    parser.add_argument("--cache", type=Path, help="keep the recorded legs here")
    parser.add_argument(
        "--corpora", default="scifact,squad", help="which corpora to record and train on"
    )
    parser.add_argument(
        "--most", type=int, default=1200, help="queries per corpus at most (every n-th)"
    )


def load_corpora(args: argparse.Namespace) -> list[Corpus]:
    sources = {"scifact": args.beir, "squad": args.squad}
    return [
        record_corpus(name, eval_tenant_id(sources[name]), args.cache, args.most)
        for name in args.corpora.split(",")
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--out", type=Path, default=SHIPPED_MODEL)
    args = parser.parse_args()
    corpora = load_corpora(args)
    model = shipped_training(corpora)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(model.to_json(), encoding="utf-8")
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes): {model.trained_on}")
    for name, weight in zip(model.features, model.weights, strict=True):
        print(f"  {name:24s} {weight:+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
