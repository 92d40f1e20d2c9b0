"""The Reranker port over the common `/rerank` wire format: a reranker the user
already runs (a cross-encoder behind Cohere-, Jina- or TEI-style servers, or
vLLM's rerank endpoint). Off by default; `GROUNDWORK_RERANK_URL` turns it on.

Two request shapes exist in the wild and both are spoken:
- `cohere` (Cohere, Jina, vLLM): `{"model", "query", "documents": [str], "top_n"}`
  answered by `{"results": [{"index", "relevance_score"}]}`;
- `tei` (Hugging Face text-embeddings-inference): `{"query", "texts": [str]}`
  answered by `[{"index", "score"}]`.
Either answer is read whichever shape was sent (servers that accept one often
answer in the other's envelope).

A slow endpoint must not become a slow search: each call has a timeout, and a
circuit breaker stops calling an endpoint that keeps failing; either way the
call raises `EngineUnavailable` and the kernel ranks locally and says so. The
request is bounded: at most `MAX_DOCUMENTS` candidates of `MAX_DOCUMENT_CHARS`
each. The API key is sent as a bearer token and never appears in a message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import httpx

from groundwork.errors import EngineUnavailable
from groundwork.retrieval.query import InterpretedQuery
from groundwork.retrieval.rerank import CircuitBreaker, RerankCandidate

WireFormat = Literal["cohere", "tei"]
#: the kernel hands over at most its candidate cap (200); a cross-encoder's cost
#: grows with each, so the adapter sends the head of the fused order only
MAX_DOCUMENTS = 100
#: cross-encoders read ~512 tokens; more text is cost without effect
MAX_DOCUMENT_CHARS = 2000
DEFAULT_TIMEOUT_SECONDS = 2.0


class HttpReranker:
    def __init__(
        self,
        url: str,
        model: str = "",
        *,
        wire_format: WireFormat = "cohere",
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        breaker: CircuitBreaker | None = None,
        client: httpx.Client | None = None,
    ) -> None:
        if wire_format not in ("cohere", "tei"):
            raise ValueError(f"unknown rerank wire format {wire_format!r}: cohere or tei")
        self.endpoint = (
            url.rstrip("/") if url.rstrip("/").endswith("/rerank") else f"{url.rstrip('/')}/rerank"
        )
        self.model = model
        self.wire_format = wire_format
        self.timeout = timeout
        self.breaker = breaker or CircuitBreaker()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.Client(headers=headers, timeout=timeout)

    def __repr__(self) -> str:  # the key stays out of logs and tracebacks
        return f"HttpReranker({self.endpoint!r}, model={self.model!r}, format={self.wire_format})"

    def reorders(self, query: InterpretedQuery) -> bool:
        return True

    def rerank(self, query: InterpretedQuery, candidates: Sequence[RerankCandidate]) -> list[str]:
        if not candidates:
            return []
        if not self.breaker.allow():
            raise EngineUnavailable(
                f"the reranker at {self.endpoint} failed repeatedly; its circuit is open"
            )
        head = list(candidates[:MAX_DOCUMENTS])
        texts = [c.text[:MAX_DOCUMENT_CHARS] for c in head]
        try:
            response = self._client.post(self.endpoint, json=self._body(query.text, texts))
            response.raise_for_status()
            scores = _scores(response.json(), len(head))
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            self.breaker.failed()
            raise EngineUnavailable(
                f"the reranker at {self.endpoint} did not answer ({type(exc).__name__})"
            ) from exc
        self.breaker.succeeded()
        ranked = sorted(range(len(head)), key=lambda i: (-scores.get(i, float("-inf")), i))
        return [head[i].chunk_id for i in ranked]

    def _body(self, query: str, texts: list[str]) -> dict[str, Any]:
        if self.wire_format == "tei":
            return {"query": query, "texts": texts, "truncate": True}
        body: dict[str, Any] = {"query": query, "documents": texts, "top_n": len(texts)}
        if self.model:
            body["model"] = self.model
        return body

    def close(self) -> None:
        self._client.close()


def _scores(payload: Any, count: int) -> dict[int, float]:
    """index -> score from either envelope; an index out of range is a broken
    answer (ValueError), not something to rank by."""
    items = payload["results"] if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise ValueError("a rerank answer holds a list of results")
    scores: dict[int, float] = {}
    for item in items:
        index = int(item["index"])
        if not 0 <= index < count:
            raise ValueError(f"a rerank result names document {index} of {count}")
        score = item["relevance_score"] if "relevance_score" in item else item["score"]
        scores[index] = float(score)
    return scores
