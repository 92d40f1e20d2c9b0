"""The `/rerank` adapter against a loopback server speaking each wire format,
and the kernel's promise: a slow or failing reranker degrades to the local
ranking and the outcome says so."""

from __future__ import annotations

import pytest

from groundwork.errors import EngineUnavailable
from groundwork.retrieval.query import interpret
from groundwork.retrieval.rerank import CircuitBreaker, RerankCandidate
from resources.models.rerank_http import MAX_DOCUMENT_CHARS, HttpReranker, _scores
from tests.rerank_endpoint import serving

CANDIDATES = [
    RerankCandidate("c-0", "an unrelated passage about weather"),
    RerankCandidate("c-1", "interleukin signalling in the liver"),
    RerankCandidate("c-2", "interleukin six signalling drives liver inflammation"),
]
QUERY = interpret("interleukin six liver inflammation")


@pytest.mark.parametrize(
    ("sent", "answered"), [("cohere", "cohere"), ("tei", "tei"), ("cohere", "tei")]
)
def test_the_endpoint_order_is_the_answer(sent: str, answered: str) -> None:
    with serving(answered) as endpoint:
        reranker = HttpReranker(endpoint.url, "bge-reranker", wire_format=sent)  # type: ignore[arg-type]
        assert reranker.rerank(QUERY, CANDIDATES) == ["c-2", "c-1", "c-0"]
    body = endpoint.received[0]
    if sent == "tei":
        assert body["texts"][2] == CANDIDATES[2].text and "documents" not in body
    else:
        assert body["documents"][2] == CANDIDATES[2].text and body["model"] == "bge-reranker"


def test_documents_are_bounded_and_the_key_is_a_bearer_token_never_shown() -> None:
    long = [RerankCandidate("long", "x" * (MAX_DOCUMENT_CHARS * 3))]
    with serving() as endpoint:
        reranker = HttpReranker(endpoint.url, api_key="secret-key-123")
        reranker.rerank(QUERY, long)
    assert len(endpoint.received[0]["documents"][0]) == MAX_DOCUMENT_CHARS
    assert endpoint.headers[0]["Authorization"] == "Bearer secret-key-123"
    assert "secret-key-123" not in repr(reranker)


def test_a_slow_endpoint_fails_within_the_timeout() -> None:
    with serving() as endpoint:
        endpoint.delay = 1.0
        reranker = HttpReranker(endpoint.url, timeout=0.2)
        with pytest.raises(EngineUnavailable, match="did not answer"):
            reranker.rerank(QUERY, CANDIDATES)


def test_the_circuit_opens_after_repeated_failures_and_closes_after_the_cool_down() -> None:
    now = [0.0]
    breaker = CircuitBreaker(failures=2, cool_down=30.0, clock=lambda: now[0])
    with serving() as endpoint:
        endpoint.status = 503
        reranker = HttpReranker(endpoint.url, breaker=breaker)
        for _ in range(2):
            with pytest.raises(EngineUnavailable):
                reranker.rerank(QUERY, CANDIDATES)
        with pytest.raises(EngineUnavailable, match="circuit is open"):
            reranker.rerank(QUERY, CANDIDATES)
        assert len(endpoint.received) == 2  # the open circuit never called it
        now[0] = 31.0
        endpoint.status = 200
        assert reranker.rerank(QUERY, CANDIDATES)[0] == "c-2"
        assert len(endpoint.received) == 3


def test_a_broken_answer_is_a_failure_not_an_order() -> None:
    with serving() as endpoint:
        reranker = HttpReranker(endpoint.url + "/elsewhere")  # answered 404
        with pytest.raises(EngineUnavailable, match="did not answer"):
            reranker.rerank(QUERY, CANDIDATES)
    with pytest.raises(ValueError, match="names document 7"):
        _scores({"results": [{"index": 7, "relevance_score": 1.0}]}, 3)
    with pytest.raises(ValueError, match="list of results"):
        _scores({"results": "nope"}, 3)
