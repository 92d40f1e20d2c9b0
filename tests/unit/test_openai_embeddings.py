"""The OpenAI-compatible embeddings adapter's guarantees beyond the wire: the
slot's dimension only, retries for throttling and 5xx, no retry of a refusal,
the key never shown. Against a loopback server computing with the bundled MiniLM."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from groundwork.embedding_models import MINILM_L6_V2_INT8, OPENAI_COMPATIBLE_MODELS
from groundwork.errors import DimensionMismatch, EngineUnavailable
from resources.models.embeddings import OnnxEmbeddingProvider, _minilm_files, minilm_tokenizer_json
from resources.models.openai_embeddings import MAX_BATCH, OpenAICompatibleEmbeddings
from tests.embeddings_endpoint import EmbeddingsEndpoint, serving

SLOT = OPENAI_COMPATIBLE_MODELS["openai_compatible_384"]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[EmbeddingsEndpoint]:
    onnx, tokenizer = _minilm_files()
    with serving(OnnxEmbeddingProvider(MINILM_L6_V2_INT8, onnx, tokenizer, threads=1)) as e:
        yield e


def _client(endpoint: EmbeddingsEndpoint, **kw: object) -> OpenAICompatibleEmbeddings:
    return OpenAICompatibleEmbeddings(SLOT, endpoint.url, "minilm", minilm_tokenizer_json(), **kw)  # type: ignore[arg-type]


def test_vectors_come_back_in_input_order_and_normalised(endpoint: EmbeddingsEndpoint) -> None:
    texts = [f"text number {i}" for i in range(MAX_BATCH + 3)]  # two requests
    before = len(endpoint.received)
    vectors = _client(endpoint).embed_documents(texts)
    assert len(endpoint.received) - before == 2
    assert vectors[5] == _client(endpoint).embed_documents([texts[5]])[0]
    assert all(math.isclose(sum(x * x for x in v), 1.0, rel_tol=1e-6) for v in vectors)


def test_another_dimension_is_refused_naming_the_slot_to_use(
    endpoint: EmbeddingsEndpoint,
) -> None:
    endpoint.dimension = 256
    try:
        with pytest.raises(DimensionMismatch, match="openai_compatible_256"):
            _client(endpoint).embed_query("anything")
    finally:
        endpoint.dimension = None


def test_throttling_and_server_errors_are_retried(endpoint: EmbeddingsEndpoint) -> None:
    endpoint.fail_next = [429, 503]
    endpoint.retry_after = "0"
    before = len(endpoint.received)
    assert len(_client(endpoint).embed_query("retry me")) == SLOT.dimension
    assert len(endpoint.received) - before == 3


def test_a_refused_request_is_not_retried_and_names_no_key(endpoint: EmbeddingsEndpoint) -> None:
    endpoint.fail_next = [400]
    before = len(endpoint.received)
    client = _client(endpoint, api_key="sk-secret-999")
    with pytest.raises(EngineUnavailable, match="HTTP 400") as refused:
        client.embed_query("bad")
    assert len(endpoint.received) - before == 1
    assert "sk-secret-999" not in str(refused.value) and "sk-secret-999" not in repr(client)


def test_an_endpoint_that_is_down_fails_as_infrastructure() -> None:
    client = OpenAICompatibleEmbeddings(
        SLOT, "http://127.0.0.1:9/v1", "minilm", minilm_tokenizer_json(), timeout=0.5
    )
    with pytest.raises(EngineUnavailable, match="failed"):
        client.embed_query("anyone there?")
