"""Artifacts: named, versioned deliverables in the ordinary corpus.

An artifact is a document of type `artifact` (its Markdown body, title, path
and indexing state live on the document) plus a generation counter,
provenance, receipts and rendered files by role. Writes follow one order:
every blob is written, then the document version (stored, not yet current),
then one transaction moves the generation by compare-and-set, records the
version and points the document at it. A stale writer fails and is told to
reload; a crash before the commit leaves the current generation intact.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from groundwork.artifact_edits import (
    Edit,
    EditsApplied,
    EditsRefused,
    ReplaceSection,
    apply_edits,
    proposal_digest,
)
from groundwork.artifact_indexing import Indexing
from groundwork.artifact_roles import ROLE_LIMITS as ROLE_LIMITS
from groundwork.artifact_roles import (
    BlobPurges,
    discard_staged,
    purge_superseded,
    render_roles,
    stage_roles,
)
from groundwork.artifact_roles import NewFile as NewFile
from groundwork.artifact_roles import put_content as put_content
from groundwork.artifact_roles import size_problem as size_problem
from groundwork.artifact_staleness import CitationStates
from groundwork.attachments import refuse_inline_bytes
from groundwork.catalog import Catalog, NeedsApproval
from groundwork.errors import InvalidRequest, NotFound
from groundwork.extract.markdown import markdown_blocks
from groundwork.ports import AccessScope, BlobStore
from groundwork.stages.registration import (
    IncomingFile,
    Registration,
    register_incoming,
)

MAX_MARKDOWN_CHARS = 200_000
ROLES = ("primary", "preview", "source", "export")
USER_READABLE_ROLES = ("primary", "preview", "export")


def provenance_from(
    tool: str,
    run: str,
    inputs: str | Mapping[str, Any],
    derived_from: Sequence[Mapping[str, str]] = (),
) -> Provenance:
    """One provenance shape whichever transport wrote it: inputs given as text
    are stored as {"text": ...}; a reference is accepted as the tool schema
    writes it ({ref_type, id, version}) or as stored ({chunk_id, content_hash}
    / {source_id, version_id}) and always stored in the latter form. A file
    inline in either (a data: URI at any depth) is refused: provenance
    references files, and every result that shows it would carry the bytes."""
    refuse_inline_bytes(inputs, "provenance.inputs")
    refuse_inline_bytes(list(derived_from), "provenance.derived_from")
    refs: list[dict[str, str]] = []
    for ref in derived_from:
        if "ref_type" in ref:
            if ref["ref_type"] == "chunk":
                refs.append({"chunk_id": ref["id"], "content_hash": ref["version"]})
            else:
                refs.append({"source_id": ref["id"], "version_id": ref["version"]})
        else:
            refs.append(dict(ref))
    given = {"text": inputs} if isinstance(inputs, str) else dict(inputs)
    return Provenance(tool, given, run, tuple(refs))


@dataclass(frozen=True, slots=True)
class Provenance:
    """Required on every version: what produced it, from what."""

    tool: str
    inputs: dict[str, Any]
    run: str
    derived_from: tuple[
        dict[str, str], ...
    ] = ()  # {"chunk_id", "content_hash"} or {"source_id", "version_id"}

    def validated(self) -> Provenance:
        if not self.tool.strip() or not self.run.strip():
            raise InvalidRequest("provenance needs the producing tool and the run")
        for ref in self.derived_from:
            if not (
                {"chunk_id", "content_hash"} <= ref.keys()
                or {"source_id", "version_id"} <= ref.keys()
            ):
                raise InvalidRequest(
                    "each derived_from entry names a chunk (chunk_id, content_hash) "
                    "or a source version (source_id, version_id)"
                )
        normalised = json.loads(json.dumps(self.inputs, sort_keys=True, default=str))
        return Provenance(self.tool.strip(), normalised, self.run.strip(), self.derived_from)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "inputs": self.inputs,
            "run": self.run,
            "derived_from": [dict(r) for r in self.derived_from],
        }


@dataclass(frozen=True, slots=True)
class ArtifactRecord:
    artifact_id: str
    tenant_id: str
    source_id: str
    format: str
    generation: int
    filename: str
    subjects: tuple[str, ...]
    current_version_id: str | None
    processing_state: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ArtifactVersion:
    generation: int
    source_version_id: str
    provenance: dict[str, Any]
    restored_from: int | None
    summary: tuple[str, ...]
    created_at: datetime
    blob_key: str
    sha256: str


@dataclass(frozen=True, slots=True)
class ArtifactFile:
    file_id: str
    artifact_id: str
    generation: int
    role: str
    format: str
    media_type: str
    blob_key: str
    sha256: str
    size_bytes: int


class StaleGenerationError(Exception):
    """The artifact moved on since the writer read it."""

    def __init__(self, current: int) -> None:
        super().__init__(
            f"the artifact is at generation {current}; reload it and apply the change again"
        )
        self.current = current


class ArtifactStore(CitationStates, BlobPurges, Protocol):
    """Artifact rows in the catalog database.

    Contract: `commit_version` is the only way the generation moves; it checks
    `expected_generation` under a row lock, so of two concurrent writers
    exactly one wins and the other gets StaleGenerationError. Reads take a
    scope and answer None for hidden and missing alike. The store reports the
    cited chunks' and sources' states (`CitationStates`); whether that makes a
    version stale is groundwork.artifact_staleness's rule.
    """

    def commit_version(
        self,
        tenant_id: str,
        artifact_id: str,
        source_id: str,
        expected_generation: int,
        source_version_id: str,
        provenance: dict[str, Any],
        restored_from: int | None,
        summary: Sequence[str],
        files: Sequence[NewFile],
    ) -> int: ...

    def get(self, scope: AccessScope, artifact_id: str) -> ArtifactRecord | None: ...

    def versions(self, scope: AccessScope, artifact_id: str) -> list[ArtifactVersion]: ...

    def files(
        self, scope: AccessScope, artifact_id: str, generation: int
    ) -> list[ArtifactFile]: ...


@dataclass(frozen=True, slots=True)
class Saved:
    artifact_id: str
    source_id: str
    generation: int
    changed: bool = True
    summary: tuple[str, ...] = field(default=())
    #: superseded blobs whose delete failed ("key: reason"): queued, retried by the next purge
    unpurged: tuple[str, ...] = field(default=())
    #: the document version this save made current (None: no change, no version)
    version_id: str | None = None
    #: how far the save's own indexing got (groundwork.artifact_indexing; set by the services)
    indexing: Indexing | None = None


def document_title(markdown: str, fallback: str) -> str:
    for block in markdown_blocks(markdown):
        if block.kind.value == "heading":
            return block.text
    return fallback


def _register(
    catalog: Catalog,
    blobs: BlobStore,
    tenant_id: str,
    artifact_id: str,
    path: str,
    subjects: Sequence[str],
    markdown: str,
) -> Registration:
    if len(markdown) > MAX_MARKDOWN_CHARS:
        raise InvalidRequest(f"the body is over {MAX_MARKDOWN_CHARS} characters")
    data = markdown.encode()
    outcome = register_incoming(
        catalog,
        blobs,
        IncomingFile(
            tenant_id,
            f"artifact:{artifact_id}",
            path,
            subjects,
            "text/markdown",
            doc_type="artifact",
            make_current=False,
        ),
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        write=lambda key: blobs.put(key, data),
    )
    assert not isinstance(outcome, NeedsApproval)
    return outcome


def create_artifact(
    catalog: Catalog,
    blobs: BlobStore,
    store: ArtifactStore,
    *,
    tenant_id: str,
    subjects: Sequence[str],
    path: str,
    markdown: str,
    provenance: Provenance,
    fmt: str = "markdown",
) -> Saved:
    """`fmt`: the primary file's format, any registered renderer's (the
    document is the Markdown body whatever it is: what is indexed and edited)."""
    provenance = provenance.validated()
    if not path.strip() or not path.endswith(".md"):
        raise InvalidRequest("an artifact's path is a Markdown file name ending in .md")
    roles = render_roles(fmt, document_title(markdown, path), markdown, provenance.to_dict(), ())
    artifact_id = f"art_{uuid.uuid4().hex}"
    registration = _register(catalog, blobs, tenant_id, artifact_id, path, subjects, markdown)
    files = stage_roles(blobs, roles)
    generation = store.commit_version(
        tenant_id,
        artifact_id,
        registration.source_id,
        0,
        registration.version_id,
        provenance.to_dict(),
        None,
        ("created",),
        files,
    )
    return Saved(
        artifact_id,
        registration.source_id,
        generation,
        summary=("created",),
        version_id=registration.version_id,
    )


def _current(
    store: ArtifactStore, scope: AccessScope, artifact_id: str
) -> tuple[ArtifactRecord, ArtifactVersion]:
    record = store.get(scope, artifact_id)
    if record is None:
        raise NotFound(f"no artifact {artifact_id} is visible to this key")
    versions = store.versions(scope, artifact_id)
    current = next((v for v in versions if v.generation == record.generation), None)
    if current is None:
        raise NotFound(f"artifact {artifact_id} has no committed version")
    return record, current


def _next_version(
    catalog: Catalog,
    blobs: BlobStore,
    store: ArtifactStore,
    record: ArtifactRecord,
    markdown: str,
    provenance: Provenance,
    summary: tuple[str, ...],
    *,
    edits: Sequence[Edit] = (),
    restored_from: int | None = None,
) -> Saved:
    """The write order for a version after the first: every role rendered
    (nothing stored yet), the document version (stored, not current), the
    role blobs staged, then one commit moves the generation by compare-and-set
    from the record's, swaps the current role rows and queues the superseded
    blobs; they are purged after it. A writer that loses the compare-and-set
    removes what it staged and leaves no version. Content the document
    already holds is no change and no version."""
    title = document_title(markdown, record.filename)
    roles = render_roles(record.format, title, markdown, provenance.to_dict(), edits)
    registration = _register(
        catalog,
        blobs,
        record.tenant_id,
        record.artifact_id,
        record.filename,
        record.subjects,
        markdown,
    )
    if not registration.created:
        return Saved(
            record.artifact_id,
            record.source_id,
            record.generation,
            changed=False,
            summary=("no change",),
        )
    files = stage_roles(blobs, roles)
    try:
        generation = store.commit_version(
            record.tenant_id,
            record.artifact_id,
            record.source_id,
            record.generation,
            registration.version_id,
            provenance.to_dict(),
            restored_from,
            summary,
            files,
        )
    except StaleGenerationError:
        discard_staged(
            store, blobs, record.tenant_id, record.source_id, registration.version_id, files
        )
        raise
    unpurged = purge_superseded(store, blobs, record.tenant_id)
    return Saved(
        record.artifact_id,
        record.source_id,
        generation,
        summary=summary,
        unpurged=unpurged,
        version_id=registration.version_id,
    )


def revise_artifact(
    catalog: Catalog,
    blobs: BlobStore,
    store: ArtifactStore,
    scope: AccessScope,
    artifact_id: str,
    *,
    expected_generation: int,
    provenance: Provenance,
    markdown: str | None = None,
    edits: Sequence[Edit] = (),
    approved_digest: str | None = None,
) -> Saved | EditsRefused:
    """Either a whole new body (`markdown`) or edit proposals; a whole body that
    replaces existing content is a destructive edit too. `approved_digest` is
    what a verified approval names (the services check the signature)."""
    provenance = provenance.validated()
    record, current = _current(store, scope, artifact_id)
    if record.generation != expected_generation:
        raise StaleGenerationError(record.generation)
    old = blobs.get(current.blob_key).decode()
    if markdown is not None and edits:
        raise InvalidRequest("send either markdown or edits, not both")
    if markdown is None and not edits:
        raise InvalidRequest("send the new markdown or a list of edits")
    summary: tuple[str, ...]
    if edits:
        outcome = apply_edits(
            old,
            edits,
            artifact_id=artifact_id,
            generation=expected_generation,
            approved_digest=approved_digest,
        )
        if isinstance(outcome, EditsRefused):
            return outcome
        assert isinstance(outcome, EditsApplied)
        new, summary = outcome.markdown, outcome.summary
    else:
        assert markdown is not None
        new, summary = markdown, ("replaced the body",)
        # replacing the whole body overwrites existing content: it needs approval
        whole = (ReplaceSection(heading="*", body=new),)
        digest = proposal_digest(artifact_id, expected_generation, whole)
        if old.strip() and new.strip() != old.strip() and approved_digest != digest:
            return EditsRefused(
                "approval-required",
                "a new body overwrites the current one; it needs approval (or propose edits)",
                (f"the whole body ({len(old)} characters)",),
                digest,
            )
    return _next_version(catalog, blobs, store, record, new, provenance, summary, edits=edits)


def restore_artifact(
    catalog: Catalog,
    blobs: BlobStore,
    store: ArtifactStore,
    scope: AccessScope,
    artifact_id: str,
    *,
    expected_generation: int,
    generation: int,
    run: str,
) -> Saved:
    """A new version whose content is generation `generation`'s, by reference
    (the same content-addressed blob): the pointer never moves backwards."""
    record, _ = _current(store, scope, artifact_id)
    if record.generation != expected_generation:
        raise StaleGenerationError(record.generation)
    versions = {v.generation: v for v in store.versions(scope, artifact_id)}
    old = versions.get(generation)
    if old is None:
        raise NotFound(
            f"artifact {artifact_id} has no generation {generation}; it has {sorted(versions)}"
        )
    markdown = blobs.get(old.blob_key).decode()
    provenance = Provenance(
        "restore", {"generation": generation}, run, tuple(old.provenance.get("derived_from", ()))
    ).validated()
    summary = (f"restored generation {generation}",)
    return _next_version(
        catalog, blobs, store, record, markdown, provenance, summary, restored_from=generation
    )
