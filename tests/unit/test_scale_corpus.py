"""The scale bench's corpus and its stand-in embedder (testbed/scale_corpus.py,
testbed/topic_mix_embedder.py): a document becomes exactly its planned chunks
through the real extraction and chunking, and every chunk is recognised by
the embedder, so a million-chunk load is neither miscounted nor silently
embedded by the real model."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from groundwork.chunking import ChunkingPolicy, chunk_blocks
from groundwork.documents import ExtractedDocument
from groundwork.embedding_models import BGE_SMALL_EN_V15_Q
from groundwork.extract import extract
from groundwork.ports import EmbeddingProvider
from resources.composition.settings import GroundworkSettings
from resources.models.embeddings import load_embedding_provider
from testbed.scale_corpus import (
    CHUNKS_PER_SOURCE,
    MAX_SENTENCE_CHARS,
    MAX_SENTENCE_TOKENS,
    TopicDocuments,
    documents_for,
    topic_documents_from,
)
from testbed.topic_mix_embedder import TopicMixEmbedder

SUBJECTS = [
    ("Cardiac", "heart rhythm", "atrial fibrillation", "the left ventricle"),
    ("Galaxy", "telescope survey", "dark matter halos", "the redshift"),
    ("Wheat", "crop yield", "soil nitrogen", "the harvest"),
    ("Malaria", "mosquito nets", "parasite resistance", "the infection rate"),
    ("Glacier", "ice sheet", "sea level rise", "the melt season"),
    ("Vaccine", "antibody titres", "booster doses", "the immune response"),
    ("Bridge", "steel cables", "wind loading", "the main span"),
    ("Sleep", "circadian clock", "melatonin release", "the night shift"),
    ("Coral", "reef bleaching", "ocean warming", "the symbiotic algae"),
    ("Battery", "lithium anodes", "charge cycles", "the electrolyte"),
    ("Language", "word learning", "infant speech", "the second year"),
    ("Insulin", "blood glucose", "pancreatic beta cells", "the fasting state"),
]


def _dense_sentence(doc: int, variant: int, count_tokens: Callable[[str], int]) -> str:
    """The worst sentence the corpus keeps: as many tokens (digits, hyphens,
    units) as its bounds allow."""
    words = f"IL-{doc}7 TNF-{doc}9 p=0.0{doc}1 CD4-CD8 3.{doc}mg/kg".split()
    text = f"Cohort {doc}-{variant}"
    for n in range(1000):
        longer = f"{text} {words[n % len(words)]}"
        if len(longer) + 1 > MAX_SENTENCE_CHARS or count_tokens(longer + ".") > MAX_SENTENCE_TOKENS:
            return text + "."
        text = longer
    raise AssertionError("unreachable")


def _texts(count_tokens: Callable[[str], int]) -> list[str]:
    texts = []
    for doc, (name, a, b, c) in enumerate(SUBJECTS):
        topical = [
            f"{name} studies measured {a} over ten years in three independent cohorts.",
            f"Changes in {b} explained most of the variation observed in {c}.",
            f"The {a} of the treated group differed from controls after the first year.",
            f"Models that include {b} predict {c} better than those that do not.",
            f"Long-term follow-up of {a} confirmed the early findings on {b}.",
        ]
        dense = [_dense_sentence(doc, variant, count_tokens) for variant in range(3)]
        too_long = dense[0][:-1] + " IL-6 TNF-9 p=0.1."
        skipped = [
            f"Short {doc}.",
            "<b>markup is skipped</b>.",
            "A sentence shared by every document.",
            too_long,
        ]
        texts.append(" ".join([*topical, *dense, *skipped]))
    return texts


@pytest.fixture(scope="module")
def real(settings: GroundworkSettings) -> EmbeddingProvider:
    return load_embedding_provider(BGE_SMALL_EN_V15_Q, settings.models_dir)


@pytest.fixture(scope="module")
def topics(real: EmbeddingProvider) -> TopicDocuments:
    return topic_documents_from(_texts(real.count_tokens), len(SUBJECTS), real.count_tokens)


def _chunk_contents(markdown: str, real: EmbeddingProvider) -> list[str]:
    extracted = extract(markdown.encode(), "text/markdown", "notes/x.md")
    assert isinstance(extracted, ExtractedDocument)
    chunks = chunk_blocks(
        extracted.blocks,
        tenant_id="t",
        source_id="s",
        version_id="v",
        count_tokens=real.count_tokens,
        policy=ChunkingPolicy(max_tokens=min(256, real.model.max_tokens)),  # as assets/chunks.py
    )
    return [c.content for c in chunks]


def test_only_usable_sentences_of_one_document_are_kept(
    topics: TopicDocuments, real: EmbeddingProvider
) -> None:
    assert len(topics.sentences) == len(SUBJECTS)
    for sentences in topics.sentences:
        # too short, markup, the shared sentence and the one over 80 tokens are gone
        assert len(sentences) == 8
        assert all(len(s) <= MAX_SENTENCE_CHARS for s in sentences)
        assert max(real.count_tokens(s) for s in sentences) > MAX_SENTENCE_TOKENS - 5


def test_a_source_is_its_planned_chunks_through_extraction_and_chunking(
    topics: TopicDocuments, real: EmbeddingProvider
) -> None:
    # the worst case: every section quotes three sentences of the most tokens kept
    worst = TopicDocuments(
        topics.passages,
        tuple(tuple(s for s in d if s.startswith("Cohort")) for d in topics.sentences),
    )
    for corpus in (topics, worst):
        documents = documents_for("t0001", 2 * CHUNKS_PER_SOURCE + 7, corpus, seed=14)
        assert [len(_chunk_contents(d.markdown, real)) for d in documents] == [20, 20, 7]


def test_generation_is_deterministic_per_tenant(topics: TopicDocuments) -> None:
    assert documents_for("t0001", 45, topics, 14) == documents_for("t0001", 45, topics, 14)
    assert documents_for("t0001", 45, topics, 14) != documents_for("t0002", 45, topics, 14)


def test_every_chunk_gets_its_topics_mixed_vector(
    topics: TopicDocuments, real: EmbeddingProvider
) -> None:
    bases = np.asarray(real.embed_documents(list(topics.passages)), dtype=np.float32)
    embedder = TopicMixEmbedder(real, bases, topics.topic_of(), noise=0.2)
    contents = [
        c
        for d in documents_for("t0001", 40, topics, seed=14)
        for c in _chunk_contents(d.markdown, real)
    ]
    vectors = np.asarray(embedder.embed_documents(contents))
    assert (embedder.mixed, embedder.embedded) == (40, 0)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    for content, vector in zip(contents, vectors, strict=True):
        quoted = embedder.topics(content)
        # the document two of its three sentences come from is its nearest base
        assert int(np.argmax(bases @ vector)) == quoted[0]
    # noise is the text's own: the same text, the same vector, alone or in a batch
    assert embedder.embed_documents(contents[:1]) == [tuple(float(x) for x in vectors[0])]
    assert not np.allclose(vectors[0], vectors[1])
