from __future__ import annotations

import pytest

from groundwork.citations import ELLIPSIS, MAX_EXCERPT_CHARS, excerpt
from groundwork.errors import InvalidRequest
from groundwork.retrieval.fusion import RRF_K, reciprocal_rank_fusion
from groundwork.retrieval.kernel import SearchRequest


def test_rrf_uses_ranks_only_and_rewards_agreement() -> None:
    fused = reciprocal_rank_fusion({"vector": ["a", "b", "c"], "keyword": ["c", "d"]})
    assert fused[0].chunk_id == "c"
    assert fused[0].score == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 1))
    assert fused[0].ranks == {"vector": 3, "keyword": 1}
    assert {f.chunk_id for f in fused} == {"a", "b", "c", "d"}


def test_rrf_ties_are_deterministic() -> None:
    one = reciprocal_rank_fusion({"vector": ["a"], "keyword": ["b"]})
    two = reciprocal_rank_fusion({"keyword": ["b"], "vector": ["a"]})
    assert [f.chunk_id for f in one] == [f.chunk_id for f in two] == ["a", "b"]


def test_rrf_ignores_duplicates_within_a_leg() -> None:
    fused = reciprocal_rank_fusion({"vector": ["a", "a", "b"]})
    assert fused[1].ranks == {"vector": 3}


def test_excerpt_cuts_on_a_word_boundary_with_an_ellipsis() -> None:
    text = "word " * 1000
    cut = excerpt(text)
    assert len(cut) <= MAX_EXCERPT_CHARS
    assert cut.endswith(ELLIPSIS) and not cut[:-1].endswith(" ")
    assert cut[:-1].split(" ")[-1] == "word"
    assert excerpt("short text") == "short text"


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (SearchRequest(query="  "), "empty"),
        (SearchRequest(query="x" * 2001), "2000"),
        (SearchRequest(query="q", limit=0), "limit"),
        (SearchRequest(query="q", limit=10, candidates=5), "candidates"),
    ],
)
def test_search_requests_are_bounded(request_: SearchRequest, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        request_.validated()
