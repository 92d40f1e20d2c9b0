"""Citations are snapshots: everything needed to show and resolve one is stored
in it, so it survives the deletion of its source."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from groundwork.documents import Location

MAX_EXCERPT_CHARS = 2_000
ELLIPSIS = "…"


def excerpt(text: str, limit: int = MAX_EXCERPT_CHARS) -> str:
    """Cut on a word boundary with an explicit ellipsis; never mid-word."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - len(ELLIPSIS)]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS


@dataclass(frozen=True, slots=True)
class Citation:
    source_id: str
    source_version_id: str
    chunk_id: str
    content_hash: str
    title: str
    location: Location
    heading_path: tuple[str, ...]
    excerpt: str
    retrieved_at: datetime
    low_confidence: bool = False
    #: one corpus: "artifact" when the cited document is a generated artifact, with its id
    document_type: str = "source"
    artifact_id: str | None = None
    #: where a connector found the cited version: {"commit", "path", "branch"}
    #: for Git, {"url"} for a web page, {"bucket", "key"} for S3, {"path"} for a
    #: folder; () for uploads and inbox files. Sorted (key, value) pairs.
    source_location: tuple[tuple[str, str], ...] = ()
    #: "system": the cited passage is the shared system corpus's (issue #35);
    #: it resolves only for a tenant reading that corpus
    corpus: str = "tenant"

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "source_id": self.source_id,
            "source_version_id": self.source_version_id,
            "chunk_id": self.chunk_id,
            "content_hash": self.content_hash,
            "title": self.title,
            "location": self.location.to_dict(),
            "location_label": self.location.label(),
            "heading_path": list(self.heading_path),
            "excerpt": self.excerpt,
            "retrieved_at": self.retrieved_at.isoformat(),
            "low_confidence": self.low_confidence,
            "document_type": self.document_type,
            "artifact_id": self.artifact_id,
        }
        if self.source_location:
            # only when there is one: a stored snapshot is shared by identical
            # citations (migration 0024), and those of uploads stay the same bytes
            data["source_location"] = dict(self.source_location)
        if self.corpus != "tenant":
            # likewise: a tenant's own citations keep their stored bytes
            data["corpus"] = self.corpus
        return data

    def to_response(self) -> dict[str, object]:
        """As handed to a caller (any transport): the cited text is file text,
        so it goes out as `untrusted_excerpt`. `to_dict` is the stored snapshot."""
        data = self.to_dict()
        data["untrusted_excerpt"] = data.pop("excerpt")
        data.setdefault("source_location", {})
        data.setdefault("corpus", "tenant")
        return data
