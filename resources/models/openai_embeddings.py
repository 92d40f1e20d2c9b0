"""The EmbeddingProvider port over an OpenAI-compatible `/v1/embeddings`
endpoint: a bigger embedder a user already runs (vLLM, TEI's OpenAI route,
Ollama, LiteLLM, OpenAI itself). Off by default; it fills one of the
`openai_compatible_<dimension>` model slots, so a tenant moves onto it through
the same eval-gated cutover as between local models, and back.

Nothing is downloaded: the endpoint computes. What this adapter guarantees
on top of the wire:
- vectors of the slot's dimension only (an endpoint answering with another
  size is refused with both sizes named: a wrong slot is a configuration
  error, never silently written), L2-normalised here (not every server does);
- batches of at most `MAX_BATCH` texts of at most `MAX_TEXT_CHARS` each;
- a timeout and retries with backoff for throttling and 5xx (`Retry-After`
  honoured up to a bound); anything else raises `EngineUnavailable` and the
  stage's run fails and is retried (infrastructure, never a document's fault);
- tokens are counted with a local WordPiece tokenizer (the bundled MiniLM
  one): chunking needs a count before anything is sent, and the endpoint's
  own tokenizer is not available offline. Servers truncate what is longer.
The API key is a bearer token and never appears in a message or repr.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import httpx
from tokenizers import Tokenizer

from groundwork.embedding_models import EmbeddingModelRef
from groundwork.errors import DimensionMismatch, EngineUnavailable

MAX_BATCH = 64
MAX_TEXT_CHARS = 8000
DEFAULT_TIMEOUT_SECONDS = 30.0
RETRIES = 3
MAX_RETRY_AFTER_SECONDS = 10.0


class OpenAICompatibleEmbeddings:
    def __init__(
        self,
        model: EmbeddingModelRef,
        url: str,
        remote_model: str,
        tokenizer_json: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        client: httpx.Client | None = None,
    ) -> None:
        self._model = model
        base = url.rstrip("/")
        self.endpoint = base if base.endswith("/embeddings") else f"{base}/embeddings"
        self.remote_model = remote_model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.Client(headers=headers, timeout=timeout)
        self._counter = Tokenizer.from_str(tokenizer_json)
        self._counter.no_truncation()
        self._counter.no_padding()

    def __repr__(self) -> str:  # the key stays out of logs and tracebacks
        return f"OpenAICompatibleEmbeddings({self.endpoint!r}, model={self.remote_model!r})"

    @property
    def model(self) -> EmbeddingModelRef:
        return self._model

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text).ids)

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        out: list[tuple[float, ...]] = []
        for start in range(0, len(texts), MAX_BATCH):
            part = [self._model.document_prefix + t for t in texts[start : start + MAX_BATCH]]
            out.extend(self._embed(part))
        return out

    def embed_query(self, text: str) -> tuple[float, ...]:
        return self._embed([self._model.query_prefix + text])[0]

    def close(self) -> None:
        self._client.close()

    def _embed(self, texts: list[str]) -> list[tuple[float, ...]]:
        body = {
            "model": self.remote_model,
            "input": [t[:MAX_TEXT_CHARS] for t in texts],
            "encoding_format": "float",
        }
        payload = self._post(body)
        try:
            rows = sorted(payload["data"], key=lambda row: int(row["index"]))
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (KeyError, TypeError, ValueError) as exc:
            raise EngineUnavailable(
                f"the embeddings endpoint {self.endpoint} answered without vectors"
            ) from exc
        if len(vectors) != len(texts):
            raise EngineUnavailable(
                f"the embeddings endpoint {self.endpoint} returned {len(vectors)} vectors "
                f"for {len(texts)} texts"
            )
        return [self._normalised(v) for v in vectors]

    def _normalised(self, vector: list[float]) -> tuple[float, ...]:
        if len(vector) != self._model.dimension:
            raise DimensionMismatch(
                f"{self.remote_model} at {self.endpoint} answers with {len(vector)} dimensions; "
                f"the slot {self._model.key} holds {self._model.dimension}: choose "
                f"openai_compatible_{len(vector)} (or ask the endpoint for "
                f"{self._model.dimension} dimensions)"
            )
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return tuple(x / norm for x in vector)

    def _post(self, body: dict[str, Any]) -> Any:
        """Throttling (429) and 5xx are retried with backoff (Retry-After honoured,
        bounded); a timeout or refused connection likewise; the last failure
        raises EngineUnavailable naming the endpoint, never the key."""
        failure = ""
        for attempt in range(RETRIES + 1):
            try:
                response = self._client.post(self.endpoint, json=body)
            except httpx.HTTPError as exc:
                failure = type(exc).__name__
            else:
                if response.status_code == 200:
                    return response.json()
                failure = f"HTTP {response.status_code}"
                if response.status_code != 429 and response.status_code < 500:
                    break  # a refusal of the request itself: retrying repeats it
                if attempt < RETRIES:
                    time.sleep(_retry_after(response, attempt))
                    continue
            if attempt < RETRIES:
                time.sleep(0.2 * 2**attempt)
        raise EngineUnavailable(f"the embeddings endpoint {self.endpoint} failed ({failure})")


def _retry_after(response: httpx.Response, attempt: int) -> float:
    header = response.headers.get("Retry-After", "")
    try:
        return min(max(float(header), 0.0), MAX_RETRY_AFTER_SECONDS)
    except ValueError:
        return 0.2 * 2**attempt
