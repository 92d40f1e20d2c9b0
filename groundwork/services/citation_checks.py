"""Citation checks: a citation handed out resolves to its stored snapshot and
says whether the source still holds it (exists, drifted, removed) or withholds
it from this key."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from groundwork.citations import Citation
from groundwork.documents import Location
from groundwork.errors import NotFound
from groundwork.ports import Principal
from groundwork.services import tenant_wall
from groundwork.services.platform import PlatformPorts

CitationStatus = Literal["exists", "drifted", "removed", "withheld"]
CITATION_ID = re.compile(r"^cit_[0-9a-f]{32}$")


@dataclass(frozen=True, slots=True)
class CitationCheck:
    citation_id: str
    status: CitationStatus
    #: the stored snapshot; None when withheld
    citation: Citation | None


def check_citation(ports: PlatformPorts, who: Principal, citation_id: str) -> CitationCheck | None:
    """A stored citation verified against the live corpus; None when this tenant
    issued no such id. Permission is checked now: the source's current scope if
    it still exists, else the scope it had when the citation was issued, so a
    revoked reader gets `withheld`, never the snapshot's text."""
    if not CITATION_ID.match(citation_id):
        return None
    row = ports.catalog.citation(who.tenant_id, citation_id)
    if row is None:
        return None
    snapshot: dict[str, Any] = row["snapshot"]
    scope_subjects = set(row["current_subjects"] or row["subjects"] or [])
    readers = set(who.subjects)
    if snapshot.get("corpus") == "system":
        # a system corpus passage: only while the tenant reads that corpus,
        # under the subjects it is read with (the tenant wall's rule)
        system = tenant_wall.caller_scope(ports.catalog, who).system
        readers = set(system.subjects) if system is not None else set()
    if not scope_subjects & readers:
        return CitationCheck(citation_id, "withheld", None)
    status: CitationStatus
    if row["source_state"] != "active" or row["published_version"] is None:
        status = "removed"
    elif row["text_present"]:
        status = "exists"
    else:
        status = "drifted"
    citation = Citation(
        source_id=snapshot["source_id"],
        source_version_id=snapshot["source_version_id"],
        chunk_id=snapshot["chunk_id"],
        content_hash=snapshot["content_hash"],
        title=snapshot["title"],
        location=Location.from_dict(snapshot["location"]),
        heading_path=tuple(snapshot["heading_path"]),
        excerpt=snapshot["excerpt"],
        retrieved_at=datetime.fromisoformat(snapshot["retrieved_at"]),
        low_confidence=bool(snapshot.get("low_confidence", False)),
        document_type=str(snapshot.get("document_type") or "source"),
        artifact_id=snapshot.get("artifact_id"),
        # citations issued before migration 0032, and of uploads, have none
        source_location=tuple(sorted((snapshot.get("source_location") or {}).items())),
        corpus=str(snapshot.get("corpus") or "tenant"),
    )
    return CitationCheck(citation_id, status, citation)


def citation(ports: PlatformPorts, who: Principal, citation_id: str) -> CitationCheck:
    """`check_citation`, refusing (not_found) an id this tenant never issued."""
    checked = check_citation(ports, who, citation_id)
    if checked is None:
        raise NotFound(f"no citation {citation_id} for this tenant")
    return checked


@dataclass(frozen=True, slots=True)
class CitationsResolved:
    citations: tuple[CitationCheck, ...]
    unknown: tuple[str, ...]

    @property
    def withheld(self) -> int:
        return sum(1 for c in self.citations if c.status == "withheld")


def resolve_citations(
    ports: PlatformPorts, who: Principal, citation_ids: Sequence[str]
) -> CitationsResolved:
    """Each distinct id checked once, in the caller's order; ids this tenant never
    issued are listed as unknown."""
    checked: list[CitationCheck] = []
    unknown: list[str] = []
    for citation_id in dict.fromkeys(citation_ids):
        result = check_citation(ports, who, citation_id)
        if result is None:
            unknown.append(citation_id)
        else:
            checked.append(result)
    return CitationsResolved(tuple(checked), tuple(unknown))
