"""Cross-validated fusion constants (evals.fusion_cv): the replay over recorded
legs must score exactly what the kernel returns, and selection must happen on
the folds it is not scored on."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from evals.fusion_cv import (
    CrossValidation,
    FusionSetting,
    RecordedQuery,
    constants_to_adopt,
    cross_validate,
    folds_of,
    fusion_decision,
    grid,
    record_legs,
    score_query,
    summary,
)
from evals.golden import GoldenQuery
from evals.metrics import ndcg_at_k
from evals.retrieval import ranked_sources
from groundwork.documents import Location
from groundwork.ports import ScoredChunk
from groundwork.retrieval.kernel import RetrievalPolicy, SearchRequest, hybrid_search
from groundwork.retrieval.outcome import ChunkView, Found
from groundwork.retrieval.query import interpret
from tests.unit.test_kernel import STAFF, TENANT, _engines

WORDS = [
    "quota",
    "replica",
    "lag",
    "vacation",
    "budget",
    "invoice",
    "cluster",
    "shard",
    "payroll",
    "badge",
    "vendor",
    "audit",
    "backup",
    "restore",
    "latency",
    "pager",
    "rotation",
    "expense",
    "travel",
    "laptop",
    "firewall",
    "tenant",
    "index",
    "migration",
    "schema",
    "rollback",
    "canary",
    "release",
    "incident",
    "postmortem",
    "retention",
    "archive",
]


def _corpus(seed: int = 7) -> list[tuple[str, str, tuple[str, ...]]]:
    rng = random.Random(seed)
    docs = []
    for source in range(24):
        for part in range(2):
            text = " ".join(rng.choice(WORDS) for _ in range(12))
            docs.append((f"doc{source}:{part}", text, ("tenant:acme",)))
    return docs


def _golden(docs: list[tuple[str, str, tuple[str, ...]]]) -> list[GoldenQuery]:
    rng = random.Random(3)
    golden = []
    for n, (chunk_id, text, _) in enumerate(docs[::2]):
        words = text.split()
        # two words of the document, two from anywhere: ranks differ between settings
        query = " ".join([*rng.sample(words, 2), *rng.sample(WORDS, 2)])
        golden.append(GoldenQuery(f"q{n}", query, {chunk_id.split(":")[0]: 1}))
    return golden


@pytest.mark.parametrize(
    ("policy", "depth", "rerank"),
    [
        (RetrievalPolicy(), 100, False),
        (RetrievalPolicy(rrf_k=2, leg_weights=(("vector", 1.0), ("keyword", 1.25))), 5, False),
        (RetrievalPolicy(relative_floor=0.6), 50, True),
    ],
)
def test_the_replay_scores_what_the_kernel_returns(
    policy: RetrievalPolicy, depth: int, rerank: bool
) -> None:
    docs = _corpus()
    engines, _ = _engines(docs, policy)
    golden = _golden(docs)
    recorded = record_legs(engines, TENANT, golden)
    setting = FusionSetting(policy, depth)
    floor = engines.vectors.model.semantic_floor
    for item, rec in zip(golden, recorded, strict=True):
        outcome = hybrid_search(
            STAFF,
            SearchRequest(item.query, limit=depth, candidates=depth, rerank=rerank),
            engines,
        )
        hits = outcome.hits if isinstance(outcome, Found) else ()
        expected = ndcg_at_k([r.source for r in ranked_sources(hits, item)], item.sources, 10)
        replayed = score_query(rec, setting, floor, reranker=engines.reranker if rerank else None)
        assert replayed == pytest.approx(expected), item.query


def _view(chunk_id: str) -> ChunkView:
    source = chunk_id.split(":")[0]
    return ChunkView(
        chunk_id, source, "v1", source, f"{source}.md", "text/markdown", (), chunk_id,
        Location(line_start=1), "0" * 64, False,
    )  # fmt: skip


def _keyword_knows_best(queries: int = 60) -> list[RecordedQuery]:
    """The keyword leg ranks the relevant source first; the vector leg ranks it
    tenth behind nine others. More keyword weight can only help."""
    recorded = []
    for n in range(queries):
        relevant = f"gold{n}:0"
        others = [f"other{n}-{i}:0" for i in range(30)]
        vector = [*others[:9], relevant, *others[9:]]
        keyword = [relevant, *reversed(others)]
        recorded.append(
            RecordedQuery(
                GoldenQuery(f"q{n}", f"query {n}", {f"gold{n}": 1}),
                interpret(f"query {n}"),
                tuple(ScoredChunk(c, c.split(":")[0], "v1", 0.9) for c in vector),
                tuple(ScoredChunk(c, c.split(":")[0], "v1", 1.0) for c in keyword),
                {c: _view(c) for c in [relevant, *others]},
            )
        )
    return recorded


def test_selection_follows_the_training_folds() -> None:
    recorded = _keyword_knows_best()
    result = cross_validate(recorded, 0.0, RetrievalPolicy())
    assert result.queries == 60 and len(result.chosen) == result.folds == 5
    # every fold chose a setting that puts the keyword leg's answer first
    assert result.in_sample_best == pytest.approx(1.0)
    assert result.keyword_only == pytest.approx(1.0)
    assert result.out_of_fold == pytest.approx(1.0)
    assert result.vector_only < 0.5


def test_folds_partition_the_queries_and_small_sets_are_refused() -> None:
    folds = folds_of(23, 5)
    assert sorted(i for fold in folds for i in fold) == list(range(23))
    assert all(len(fold) in (4, 5) for fold in folds)
    with pytest.raises(ValueError, match="cannot be split"):
        cross_validate(_keyword_knows_best(3), 0.0, RetrievalPolicy())


def test_the_grid_keeps_the_shipped_floor_and_confidence_weight() -> None:
    shipped = replace(RetrievalPolicy(), relative_floor=0.33, low_confidence_weight=0.7)
    settings = grid(shipped)
    assert {s.policy.relative_floor for s in settings} == {0.33}
    assert {s.policy.low_confidence_weight for s in settings} == {0.7}
    assert len({s.label for s in settings}) == len(settings)


def test_constants_are_adopted_only_when_tuning_wins_out_of_fold() -> None:
    result = cross_validate(_keyword_knows_best(), 0.0, RetrievalPolicy())
    stored = summary(result)
    assert CrossValidation.from_summary(stored).in_sample_constants == result.in_sample_constants
    winning = {**stored, "out_of_fold": 0.80, "shipped": 0.75}
    assert constants_to_adopt(winning) == result.in_sample_constants
    within_noise = {**stored, "out_of_fold": 0.751, "shipped": 0.75}
    assert constants_to_adopt(within_noise) is None
    losing = {**stored, "out_of_fold": 0.70, "shipped": 0.75}
    assert constants_to_adopt(losing) is None
    assert constants_to_adopt({"skipped": "12 queries"}) is None


def test_only_a_run_of_the_serving_model_decides_the_constants() -> None:
    stored = {**summary(cross_validate(_keyword_knows_best(), 0.0, RetrievalPolicy()))}
    winning = {**stored, "out_of_fold": 0.80, "shipped": 0.75}
    serving = fusion_decision(winning, "model-a", "model-a")
    assert serving.applies and serving.constants is not None
    adopted = constants_to_adopt(winning)
    assert adopted is not None
    assert serving.constants == replace(adopted, model_key="model-a")
    assert serving.constants.serves("model-a") and not serving.constants.serves("model-b")
    candidate = fusion_decision(winning, "model-b", "model-a")
    assert not candidate.applies and "not the serving model" in candidate.reason
    losing = fusion_decision({**stored, "out_of_fold": 0.70, "shipped": 0.75}, "m", "m")
    assert losing.applies and losing.constants is None
    assert not fusion_decision({"skipped": "12 queries"}, "m", "m").applies
