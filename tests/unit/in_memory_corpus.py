"""A small corpus indexed into the in-memory fakes that pass the port
conformance suites, as the unit tests of searching need it: every chunk in
the vector and keyword indexes, readable back, its version live."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from groundwork.documents import Location
from groundwork.ports import IndexedChunk, Layer, VectorRecord
from groundwork.retrieval.kernel import RetrievalPolicy, SearchEngines
from groundwork.retrieval.outcome import ChunkView
from groundwork.retrieval.rerank import IdentifierReranker, Reranker
from tests.fakes import (
    HashingEmbedder,
    InMemoryChunkReader,
    InMemoryKeywordIndex,
    InMemoryVectorIndex,
)


@dataclass(frozen=True, slots=True)
class CorpusChunk:
    """One chunk of version v1 of its source, the part of its id before ':'."""

    chunk_id: str
    text: str
    subjects: tuple[str, ...]
    layer: Layer = "raw"
    heading_path: tuple[str, ...] | None = None  # None: (source,)
    low_confidence: bool = False

    @property
    def source(self) -> str:
        return self.chunk_id.split(":")[0]


@dataclass(frozen=True, slots=True)
class InMemoryCorpus:
    embedder: HashingEmbedder
    vectors: InMemoryVectorIndex
    keywords: InMemoryKeywordIndex
    reader: InMemoryChunkReader

    def engines(
        self,
        policy: RetrievalPolicy | None = None,
        reranker: Reranker | None = IdentifierReranker(),  # noqa: B008 (stateless)
    ) -> SearchEngines:
        """The corpus as a search's engines (the identifier reranker unless told)."""
        return SearchEngines(
            self.embedder,
            self.vectors,
            self.keywords,
            self.reader,
            reranker,
            policy or RetrievalPolicy(),
        )


def index_in_memory(tenant: str, chunks: Iterable[CorpusChunk]) -> InMemoryCorpus:
    """The chunks embedded, indexed for both legs and readable back, all live."""
    corpus = InMemoryCorpus(
        HashingEmbedder(), InMemoryVectorIndex(), InMemoryKeywordIndex(), InMemoryChunkReader()
    )
    for c in chunks:
        source = c.source
        digest = hashlib.sha256(c.text.encode()).hexdigest()
        indexed = IndexedChunk(
            c.chunk_id,
            tenant,
            source,
            "v1",
            c.subjects,
            "text/markdown",
            source,
            c.text,
            digest,
            layer=c.layer,
        )
        corpus.vectors.upsert([VectorRecord(indexed, corpus.embedder.embed_documents([c.text])[0])])
        corpus.keywords.upsert([indexed])
        view = ChunkView(
            c.chunk_id,
            source,
            "v1",
            source,
            f"{source}.md",
            "text/markdown",
            (source,) if c.heading_path is None else c.heading_path,
            c.text,
            Location(line_start=1),
            digest,
            c.low_confidence,
            c.layer,
        )
        corpus.reader.add(tenant, view, c.subjects)
    corpus.vectors.set_versions_live(tenant, ["v1"], True)
    corpus.keywords.set_versions_live(tenant, ["v1"], True)
    return corpus
