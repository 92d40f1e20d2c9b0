"""Which processes keep query embeddings: the serving ones (API, MCP) do, so a
repeated search skips the model; ingest and eval processes do not."""

from __future__ import annotations

from groundwork.embedding_cache import QueryEmbeddingCache
from resources.composition.platform import EngineEndpoints, Platform, connect
from resources.composition.settings import GroundworkSettings
from tests.conftest import TEST_DATABASE


def test_a_serving_platform_caches_query_embeddings(
    settings: GroundworkSettings, engines: EngineEndpoints, index_prefix: str, platform: Platform
) -> None:
    serving = connect(
        settings, engines, database=TEST_DATABASE, index_prefix=index_prefix, serving=True
    )
    try:
        model = settings.default_model_key
        cached = serving.embedder(model)
        assert isinstance(cached, QueryEmbeddingCache)
        first = cached.embed_query("how is replica lag measured")
        assert cached.embed_query("how is  replica lag measured") == first
        assert (cached.hits, cached.misses) == (1, 1)
        # the vector the ingest side's model gives (threads may differ in the last bits)
        again = platform.embedder(model).embed_query("how is replica lag measured")
        assert max(abs(a - b) for a, b in zip(again, first, strict=True)) < 1e-5
        assert not isinstance(platform.embedder(model), QueryEmbeddingCache)
    finally:
        serving.close()
