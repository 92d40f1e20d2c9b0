"""RetrievalOutcome: a closed union. Only `Found` carries hits, so a caller
cannot hand a model the least-bad match when nothing qualified."""

from __future__ import annotations

from dataclasses import dataclass

from groundwork.citations import Citation
from groundwork.documents import Location
from groundwork.retrieval.routing import Route


@dataclass(frozen=True, slots=True)
class ChunkView:
    """A chunk as read back for a hit, after re-checking the caller's access."""

    chunk_id: str
    source_id: str
    version_id: str
    title: str
    filename: str
    media_type: str
    heading_path: tuple[str, ...]
    body: str
    location: Location
    content_hash: str
    low_confidence: bool
    layer: str = "raw"  # "summary": a chunk of the source version's compiled summary page
    document_type: str = "source"  # "artifact": a generated artifact's document
    artifact_id: str | None = None
    #: where a connector found this version (commit and path, URL, bucket and
    #: key), sorted (key, value) pairs; () for uploads and inbox files
    source_location: tuple[tuple[str, str], ...] = ()
    #: "system": a passage of the shared system corpus, not the caller's tenant's
    corpus: str = "tenant"
    #: its section (chunk_sections, migration 0038); "" for a summary page's chunk
    parent_id: str = ""


@dataclass(frozen=True, slots=True)
class Hit:
    rank: int
    score: float
    leg_ranks: dict[str, int]
    chunk: ChunkView
    citation: Citation


@dataclass(frozen=True, slots=True)
class Found:
    hits: tuple[Hit, ...]
    kind: str = "found"
    #: legs that could not run (their engine down or refusing): the hits come
    #: from the others, and the caller is told so
    missing_legs: tuple[str, ...] = ()
    #: parts that ran in a lesser form (a remote reranker replaced by the local
    #: one), each a sentence saying which and why
    degraded: tuple[str, ...] = ()
    #: with layer "auto": the layer the router chose and why (routing.py)
    route: Route | None = None


@dataclass(frozen=True, slots=True)
class NothingAccessible:
    """The caller can see nothing at all (no subjects, or nothing published for them)."""

    kind: str = "nothing_accessible"


@dataclass(frozen=True, slots=True)
class NothingMatches:
    kind: str = "nothing_matches"


@dataclass(frozen=True, slots=True)
class NothingCloseEnough:
    """Candidates existed, but none passed the semantic floor."""

    kind: str = "nothing_close_enough"


RetrievalOutcome = Found | NothingAccessible | NothingMatches | NothingCloseEnough
