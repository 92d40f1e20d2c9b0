"""Models a user already runs, built from settings: the `/rerank` reranker and
the OpenAI-compatible embedder. Keys come from the environment at build time
(GROUNDWORK_RERANK_API_KEY, GROUNDWORK_EMBEDDINGS_API_KEY), never from
settings objects that get printed, and never at import."""

from __future__ import annotations

import os
from typing import cast

from groundwork.embedding_models import OPENAI_COMPATIBLE_MODELS, EmbeddingModelRef
from groundwork.errors import CapabilityUnavailable
from groundwork.ports import EmbeddingProvider
from groundwork.retrieval.learned_rank import LearnedReranker
from groundwork.retrieval.rerank import IdentifierReranker, Reranker
from resources.composition.settings import GroundworkSettings
from resources.models.embeddings import minilm_tokenizer_json
from resources.models.openai_embeddings import OpenAICompatibleEmbeddings
from resources.models.rerank_http import HttpReranker, WireFormat


def configured_reranker(settings: GroundworkSettings) -> tuple[Reranker, Reranker | None]:
    """(the reranker, its fallback): the remote one over the local identifier
    reranker when GROUNDWORK_RERANK_URL is set, else the local one alone. The
    local one is the identifier reranker, or the learned one with
    GROUNDWORK_RERANKER=learned (its weights read once, here)."""
    local: Reranker = LearnedReranker() if settings.reranker == "learned" else IdentifierReranker()
    if not settings.rerank_url:
        return local, None
    remote = HttpReranker(
        settings.rerank_url,
        settings.rerank_model,
        wire_format=cast(WireFormat, settings.rerank_format),
        api_key=os.environ.get("GROUNDWORK_RERANK_API_KEY") or None,
        timeout=settings.rerank_timeout,
    )
    return remote, local


def is_remote_model(model: EmbeddingModelRef) -> bool:
    return model.key in OPENAI_COMPATIBLE_MODELS


def remote_embedder(model: EmbeddingModelRef, settings: GroundworkSettings) -> EmbeddingProvider:
    """A slot with no endpoint configured says so: never an empty success."""
    if not settings.embeddings_url or not settings.embeddings_model:
        raise CapabilityUnavailable(
            f"model {model.key} is an OpenAI-compatible endpoint slot and none is configured: "
            "set GROUNDWORK_EMBEDDINGS_URL and GROUNDWORK_EMBEDDINGS_MODEL (and "
            "GROUNDWORK_EMBEDDINGS_API_KEY if the endpoint needs one)"
        )
    return OpenAICompatibleEmbeddings(
        model,
        settings.embeddings_url,
        settings.embeddings_model,
        minilm_tokenizer_json(),
        api_key=os.environ.get("GROUNDWORK_EMBEDDINGS_API_KEY") or None,
    )
