"""EmbeddingProvider conformance: one contract, run against every adapter."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace

import pytest

from groundwork.embedding_cache import QueryEmbeddingCache
from groundwork.embedding_models import (
    BGE_SMALL_EN_V15,
    BGE_SMALL_EN_V15_Q,
    E5_SMALL_V2_Q,
    MINILM_L6_V2_INT8,
    OPENAI_COMPATIBLE_MODELS,
    EmbeddingModelRef,
)
from groundwork.errors import CapabilityUnavailable
from groundwork.ports import EmbeddingProvider
from resources.composition.settings import GroundworkSettings
from resources.models.embeddings import (
    MODEL_JARS,
    OnnxEmbeddingProvider,
    _jar_files,
    load_embedding_provider,
    model_jar_path,
)
from resources.models.openai_embeddings import OpenAICompatibleEmbeddings

_LOADED: dict[str, EmbeddingProvider] = {}


def _loaded(model: EmbeddingModelRef, settings: GroundworkSettings) -> EmbeddingProvider:
    if model.key not in _LOADED:
        _LOADED[model.key] = load_embedding_provider(model, settings.models_dir)
    return _LOADED[model.key]


class EmbeddingProviderContract:
    model: EmbeddingModelRef

    @pytest.fixture
    def provider(self, settings: GroundworkSettings) -> EmbeddingProvider:
        return _loaded(self.model, settings)

    def test_is_the_port(self, provider: EmbeddingProvider) -> None:
        assert isinstance(provider, EmbeddingProvider)
        assert provider.model == self.model

    def test_vectors_have_the_declared_dimension_and_unit_length(
        self, provider: EmbeddingProvider
    ) -> None:
        vectors = provider.embed_documents(["The cat sat on the mat.", "Quarterly revenue rose."])
        assert len(vectors) == 2
        for vector in vectors:
            assert len(vector) == self.model.dimension
            assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-4)
        assert len(provider.embed_query("revenue")) == self.model.dimension

    def test_empty_input_gives_empty_output(self, provider: EmbeddingProvider) -> None:
        assert provider.embed_documents([]) == []

    def test_deterministic_and_batch_independent(self, provider: EmbeddingProvider) -> None:
        alone = provider.embed_documents(["Replica lag alert"])[0]
        batched = provider.embed_documents(
            ["Replica lag alert", "a much longer second text " * 20]
        )[0]
        assert all(math.isclose(a, b, abs_tol=1e-4) for a, b in zip(alone, batched, strict=True))

    def test_related_text_is_closer_than_unrelated(self, provider: EmbeddingProvider) -> None:
        query = provider.embed_query("How many vacation days do employees get?")
        related, unrelated = provider.embed_documents(
            [
                "Full-time employees receive 25 vacation days per calendar year.",
                "Open tray 2 and remove the jammed sheet of paper.",
            ]
        )

        def cosine(a: tuple[float, ...], b: tuple[float, ...]) -> float:
            return sum(x * y for x, y in zip(a, b, strict=True))

        assert cosine(query, related) > cosine(query, unrelated) + 0.05

    def test_each_query_is_nearest_its_own_passage(self, provider: EmbeddingProvider) -> None:
        """The retrieval property itself, over passages that share vocabulary
        (so a model that ignored its prefixes or pooled wrongly would mix them up)."""
        pairs = [
            (
                "What does aspirin do to blood platelets?",
                "Aspirin irreversibly inhibits cyclooxygenase in platelets, reducing clotting.",
            ),
            (
                "How long does the warranty on the printer last?",
                "The printer is covered by a two-year limited warranty from the date of purchase.",
            ),
            (
                "Which gene mutation causes cystic fibrosis?",
                "Cystic fibrosis is caused by mutations in the CFTR gene on chromosome 7.",
            ),
            (
                "When did the Roman Empire split into east and west?",
                "In 395 AD the Roman Empire was divided between the sons of Theodosius I.",
            ),
            (
                "How do I reset my account password?",
                "To change a forgotten password, click 'Forgot password' on the sign-in page.",
            ),
        ]
        passages = provider.embed_documents([p for _, p in pairs])
        for i, (query, _) in enumerate(pairs):
            q = provider.embed_query(query)
            scores = [sum(a * b for a, b in zip(q, p, strict=True)) for p in passages]
            assert max(range(len(scores)), key=scores.__getitem__) == i, (query, scores)

    def test_counts_tokens_of_long_text_without_truncating(
        self, provider: EmbeddingProvider
    ) -> None:
        assert provider.count_tokens("word " * 2000) > self.model.max_tokens

    def test_long_input_is_truncated_not_refused(self, provider: EmbeddingProvider) -> None:
        assert len(provider.embed_documents(["word " * 5000])[0]) == self.model.dimension


class TestBgeSmall(EmbeddingProviderContract):
    model = BGE_SMALL_EN_V15_Q


class TestBgeSmallFp32(EmbeddingProviderContract):
    """The opt-in fp32 jar (GROUNDWORK_MODEL_JARS=all ./run setup); skipped, and
    said so, on a machine that did not fetch it."""

    model = BGE_SMALL_EN_V15

    @pytest.fixture
    def provider(self, settings: GroundworkSettings) -> EmbeddingProvider:
        try:
            model_jar_path(self.model, settings.models_dir)
        except CapabilityUnavailable as exc:
            pytest.skip(str(exc))
        return _loaded(self.model, settings)

    def test_agrees_with_the_int8_model(self, provider: EmbeddingProvider, settings) -> None:
        """Same network, same pooling: quantization moves a vector only a little."""
        int8 = _loaded(BGE_SMALL_EN_V15_Q, settings)
        text = "Replica lag grows when the primary writes faster than the standby applies."
        a, b = provider.embed_documents([text])[0], int8.embed_documents([text])[0]
        assert sum(x * y for x, y in zip(a, b, strict=True)) > 0.95


class TestE5SmallV2(EmbeddingProviderContract):
    model = E5_SMALL_V2_Q

    def test_prefixes_are_applied(self, provider: EmbeddingProvider, settings) -> None:
        """A passage is embedded as "passage: <text>" and a query as "query: <text>":
        the same network without prefixes, fed the prefixed text, gives the same vector."""
        onnx, tokenizer = _jar_files(self.model, settings.models_dir)
        bare = OnnxEmbeddingProvider(
            replace(self.model, query_prefix="", document_prefix=""), onnx, tokenizer, threads=1
        )
        text = "Cystic fibrosis is caused by mutations in the CFTR gene."
        assert provider.embed_documents([text])[0] == bare.embed_documents(["passage: " + text])[0]
        assert provider.embed_query(text) == bare.embed_documents(["query: " + text])[0]
        assert provider.embed_query(text) != provider.embed_documents([text])[0]


def test_every_jar_model_names_its_entries_in_the_pinned_pom() -> None:
    """The pom pins what MODEL_JARS reads: an artifact missing from it could
    never be fetched by the set-up."""
    from pathlib import Path

    pom = (Path(__file__).resolve().parents[2] / "engines/models/pom.xml").read_text()
    for spec in MODEL_JARS.values():
        assert f"<artifactId>{spec.artifact}</artifactId>" in pom


class TestMiniLM(EmbeddingProviderContract):
    model = MINILM_L6_V2_INT8


class TestHashingFake(EmbeddingProviderContract):
    """The kernel tests' fake passes the same contract."""

    from tests.fakes import FAKE_MODEL as model  # noqa: N811

    @pytest.fixture
    def provider(self) -> EmbeddingProvider:  # type: ignore[override]
        from tests.fakes import HashingEmbedder

        return HashingEmbedder()


class TestTopicMixEmbedder(EmbeddingProviderContract):
    """The scale bench's stand-in (testbed/topic_mix_embedder.py) passes the same
    contract: texts quoting no known sentence go to the real model."""

    model = BGE_SMALL_EN_V15_Q

    @pytest.fixture
    def provider(self, settings: GroundworkSettings) -> EmbeddingProvider:  # type: ignore[override]
        import numpy as np

        from testbed.scale_corpus import topic_documents_from
        from testbed.topic_mix_embedder import TopicMixEmbedder

        real = _loaded(self.model, settings)
        topics = topic_documents_from(
            [
                "Replica lag grows when the primary writes faster than the standby applies.",
                "Quarterly revenue rose in Europe while hardware costs fell in every region.",
            ],
            2,
        )
        bases = np.asarray(real.embed_documents(list(topics.passages)), dtype=np.float32)
        return TopicMixEmbedder(real, bases, topics.topic_of())


class TestCachedBgeSmall(EmbeddingProviderContract):
    """The serving processes' query cache is an adapter of the port too."""

    model = BGE_SMALL_EN_V15_Q

    @pytest.fixture
    def provider(self, settings: GroundworkSettings) -> EmbeddingProvider:
        return QueryEmbeddingCache(_loaded(self.model, settings), capacity=8)

    def test_a_cached_query_vector_is_the_models(
        self, provider: EmbeddingProvider, settings: GroundworkSettings
    ) -> None:
        inner = _loaded(self.model, settings)
        first = provider.embed_query("replica lag  alert")
        assert provider.embed_query("replica lag alert") == first
        assert first == inner.embed_query("replica lag alert")


class TestOpenAICompatible(EmbeddingProviderContract):
    """The /v1/embeddings adapter against a loopback server computing with the
    bundled MiniLM: the same contract as every local model, on real vectors."""

    model = OPENAI_COMPATIBLE_MODELS["openai_compatible_384"]

    @pytest.fixture
    def provider(self, settings: GroundworkSettings) -> Iterator[EmbeddingProvider]:
        from resources.models.embeddings import minilm_tokenizer_json
        from tests.embeddings_endpoint import serving

        backing = _loaded(MINILM_L6_V2_INT8, settings)
        with serving(backing) as endpoint:
            yield OpenAICompatibleEmbeddings(
                self.model, endpoint.url, "all-minilm-l6-v2", minilm_tokenizer_json()
            )
