"""The result-time re-check reads only the candidates that can still be answered.

Fusion needs ranks only, so the fused order is known before any chunk is read.
A candidate whose fused score is below the relative floor of the best hit that
survives the re-check can never be answered, so reading it back (its body,
location, heading path) is wasted work for both PostgreSQL and the API: a
hybrid search asked for ~80 of them and answered 10."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from groundwork.documents import Location
from groundwork.retrieval.fusion import reciprocal_rank_fusion
from groundwork.retrieval.kernel import RetrievalPolicy, rank_candidates, recheck_and_rank
from groundwork.retrieval.outcome import ChunkView


def _view(chunk_id: str, low_confidence: bool) -> ChunkView:
    return ChunkView(
        chunk_id,
        f"src-{chunk_id}",
        "v1",
        "title",
        "file.md",
        "text/markdown",
        (),
        f"body of {chunk_id}",
        Location(line_start=1),
        "digest",
        low_confidence,
    )


class Reader:
    """Answers the re-check for every id except the dropped ones; counts what it is asked."""

    def __init__(self, dropped: set[str], low_confidence: set[str]) -> None:
        self.dropped = dropped
        self.low_confidence = low_confidence
        self.asked: list[list[str]] = []

    def __call__(self, chunk_ids: Sequence[str]) -> Mapping[str, ChunkView]:
        self.asked.append(list(chunk_ids))
        return {c: _view(c, c in self.low_confidence) for c in chunk_ids if c not in self.dropped}


def _plain(scored: Sequence[tuple[float, object, ChunkView]]) -> list[tuple[float, str]]:
    return [(score, view.chunk_id) for score, _, view in scored]


ids = st.sampled_from([f"c{i:02d}" for i in range(60)])


@settings(max_examples=400, deadline=None)
@given(
    vector=st.lists(ids, max_size=50, unique=True),
    keyword=st.lists(ids, max_size=50, unique=True),
    dropped=st.sets(ids),
    low_confidence=st.sets(ids),
    floor=st.sampled_from([0.0, 0.2, 0.5, 0.9]),
    low_weight=st.sampled_from([0.5, 0.8, 1.0]),
    rrf_k=st.sampled_from([1, 5, 60]),
    keyword_weight=st.sampled_from([0.5, 1.0, 1.25]),
)
def test_reading_a_prefix_answers_exactly_what_reading_every_candidate_does(
    vector: list[str],
    keyword: list[str],
    dropped: set[str],
    low_confidence: set[str],
    floor: float,
    low_weight: float,
    rrf_k: int,
    keyword_weight: float,
) -> None:
    policy = RetrievalPolicy(
        rrf_k=rrf_k,
        leg_weights=(("vector", 1.0), ("keyword", keyword_weight)),
        relative_floor=floor,
        low_confidence_weight=low_weight,
    )
    legs = {"vector": vector, "keyword": keyword}
    every = list(dict.fromkeys(vector + keyword))
    eager = rank_candidates(legs, Reader(dropped, low_confidence)(every), policy)
    lazy = recheck_and_rank(legs, Reader(dropped, low_confidence), policy)
    assert _plain(lazy) == _plain(eager)


def test_candidates_below_the_floor_of_the_best_are_never_read() -> None:
    """Two legs of 50 that agree on their top ten: with the shipped policy (k 5,
    floor 0.2) nothing outside the first ranks can reach a fifth of the best."""
    shared = [f"s{i}" for i in range(10)]
    vector = shared + [f"v{i}" for i in range(40)]
    keyword = shared + [f"k{i}" for i in range(40)]
    policy = RetrievalPolicy()
    reader = Reader(set(), set())
    scored = recheck_and_rank({"vector": vector, "keyword": keyword}, reader, policy)
    fused = reciprocal_rank_fusion(
        {"vector": vector, "keyword": keyword},
        k=policy.rrf_k,
        weights=dict(policy.leg_weights),
    )
    bar = fused[0].score * policy.relative_floor
    (asked,) = reader.asked  # one read: the best hit survived
    assert asked == [c.chunk_id for c in fused if c.score >= bar]
    assert len(asked) < len(fused) // 2
    assert {view.chunk_id for _, _, view in scored} <= set(asked)


def test_a_dropped_best_hit_lowers_the_floor_and_reads_further() -> None:
    """The top candidates are gone at result time (a source deleted since
    indexing): the floor is then a fifth of the best that survived, and the
    candidates that reach it are read and answered."""
    vector = [f"v{i}" for i in range(50)]
    keyword = [f"k{i}" for i in range(50)]
    dropped = {f"v{i}" for i in range(8)} | {f"k{i}" for i in range(8)}
    reader = Reader(dropped, set())
    legs = {"vector": vector, "keyword": keyword}
    scored = recheck_and_rank(legs, reader, RetrievalPolicy())
    eager = rank_candidates(legs, Reader(dropped, set())(vector + keyword), RetrievalPolicy())
    assert _plain(scored) == _plain(eager)
    assert len(reader.asked) > 1 and scored[0][2].chunk_id in {"v8", "k8"}
