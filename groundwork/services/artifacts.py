"""Artifacts for every transport: create, read (manifest, list, history),
revise, approve, restore, export, download, read a file, delete. One path for
HTTP and the tools; access follows the owning document's tenant and scope, and
anything hidden answers the same not_found as a missing id. `source` files are
never served.

Every save (create, revise, restore) indexes its new version before it
returns (groundwork.artifact_indexing) and answers how far that got;
`index` retries it. A failing store never undoes the save.

A revise call that would destroy content is refused with `approval-required`,
what it would destroy, and a signed `proposal_token`. Approval is a separate
call (`approve`) by a principal holding artifacts:approve (checked by the
transports from the scope table), which exchanges the proposal for an
`approval_token`; resubmitting the same edits with it applies them. The
proposer's own key without the approve scope cannot approve.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from groundwork import approvals
from groundwork.artifact_edits import Edit, EditsRefused
from groundwork.artifact_exports import export_version
from groundwork.artifact_indexing import Indexing, SaveIndexes, index_saved, indexing_of
from groundwork.artifact_roles import purge_superseded
from groundwork.artifact_staleness import stale_reasons
from groundwork.artifacts import (
    USER_READABLE_ROLES,
    ArtifactFile,
    ArtifactRecord,
    ArtifactVersion,
    Provenance,
    Saved,
    StaleGenerationError,
    create_artifact,
    restore_artifact,
    revise_artifact,
)
from groundwork.documents import ExtractedDocument
from groundwork.errors import NotFound, Refused
from groundwork.lifecycle import request_deletion
from groundwork.ports import Principal
from groundwork.render.renderers import extension_for, renderer_for
from groundwork.services.artifact_downloads import download_name, file_headers
from groundwork.services.platform import PlatformPorts
from groundwork.services.registration import sharing_subjects

Clock = Callable[[], datetime]


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Approved:
    approval_token: str
    artifact_id: str
    generation: int
    proposer: str
    expires_at: datetime


def _token_refused(refused: approvals.TokenRefused, what: str) -> Refused:
    return Refused(
        f"the {what} is {refused.reason}",
        "propose the edits again to get a fresh proposal_token, and have it approved",
        code="invalid",
    )


@dataclass(frozen=True, slots=True)
class ArtifactView:
    """An artifact as a reader sees it: its current version's title and
    Markdown, whether it is stale and why, and its user-readable files."""

    record: ArtifactRecord
    title: str
    markdown: str
    stale_reasons: tuple[str, ...]
    files: tuple[ArtifactFile, ...]
    #: searchable and citable yet? (a save's own answer carries its reason)
    indexing: Indexing = field(default_factory=lambda: Indexing("pending"))


ExportState = Literal["pending", "rendered", "failed"]


@dataclass(frozen=True, slots=True)
class Export:
    """One export of one version in one format (made once, then reused)."""

    export_id: str
    artifact_id: str
    generation: int
    format: str
    state: ExportState
    failure_reason: str | None
    unrenderable: tuple[str, ...]
    receipt: dict[str, Any] | None
    file: ArtifactFile | None


@dataclass(frozen=True, slots=True)
class ReadableFile:
    """A user-readable file and how to read its bytes (read only when wanted:
    a conditional request the client has cached costs no blob read)."""

    file: ArtifactFile
    read: Callable[[], bytes]
    #: the name it is downloaded as (the artifact's name, the format's extension)
    filename: str = "artifact"

    def headers(self, *, version_addressed: bool) -> dict[str, str]:
        """Cache-Control, ETag, Content-Disposition, nosniff (artifact_downloads's rule)."""
        return file_headers(
            self.filename,
            self.file.media_type,
            self.file.sha256,
            version_addressed=version_addressed,
        )


def _stale_generation(exc: StaleGenerationError) -> Refused:
    return Refused(
        str(exc),
        f"reload the artifact (generation {exc.current}) and apply the change again",
        {"current_generation": exc.current},
        "stale_generation",
    )


def _record(ports: PlatformPorts, who: Principal, artifact_id: str) -> ArtifactRecord:
    record = ports.artifacts.get(who.scope, artifact_id)
    if record is None:
        raise Refused(
            f"no artifact {artifact_id} is visible to this key",
            "check the artifact id (create_artifact or the artifact list return it)",
            code="not_found",
        )
    return record


def _describe(
    ports: PlatformPorts, who: Principal, record: ArtifactRecord, with_markdown: bool
) -> ArtifactView:
    versions = ports.artifacts.versions(who.scope, record.artifact_id)
    current = next(v for v in versions if v.generation == record.generation)
    markdown = ports.blobs.get(current.blob_key).decode()
    found = ports.catalog.current_extraction(who.scope, record.source_id)
    title = (
        found[1].title
        if found and isinstance(found[1], ExtractedDocument)
        else next(
            (line.lstrip("# ").strip() for line in markdown.splitlines() if line.startswith("#")),
            record.filename,
        )
    )
    reasons = stale_reasons(
        ports.artifacts, record.tenant_id, current.provenance.get("derived_from", [])
    )
    files = tuple(
        f
        for f in ports.artifacts.files(who.scope, record.artifact_id, record.generation)
        if f.role in USER_READABLE_ROLES
    )
    indexing = indexing_of(ports.catalog.source_status(who.scope, record.source_id))
    return ArtifactView(
        record, title, markdown if with_markdown else "", tuple(reasons), files, indexing
    )


def _save_indexes(ports: PlatformPorts, tenant_id: str) -> SaveIndexes | None:
    """The stores a save of `tenant_id` indexes into (None: no vector index
    serves its model here, so the pipeline indexes it)."""
    model = ports.serving_model(tenant_id)
    every = ports.indexes()
    vectors = next((v for v in every.vectors if v.model.key == model), None)
    if vectors is None:
        return None
    return SaveIndexes(
        ports.catalog,
        ports.blobs,
        every.keywords,
        vectors,
        ports.embedder(model),
        ports.summarizer(),
        tuple(v for v in every.vectors if v.model.key != model),
    )


def _index_version(ports: PlatformPorts, who: Principal, version_id: str) -> Indexing:
    """Index the saved version now; what is left undone is asked of the
    ingest pipeline at once (best effort: its backlog sensor sees it anyway)."""
    indexes = _save_indexes(ports, who.tenant_id)
    indexing = (
        index_saved(indexes, version_id)
        if indexes is not None
        else Indexing("pending", "the ingest pipeline indexes it")
    )
    if indexing.state != "indexed":
        ports.ingest_trigger().request_ingest(who.tenant_id)
    return indexing


def _indexed_save(ports: PlatformPorts, who: Principal, saved: Saved) -> Saved:
    if saved.version_id is None:  # no change: the current version's state
        record = _record(ports, who, saved.artifact_id)
        return replace(
            saved, indexing=indexing_of(ports.catalog.source_status(who.scope, record.source_id))
        )
    return replace(saved, indexing=_index_version(ports, who, saved.version_id))


def index(ports: PlatformPorts, who: Principal, artifact_id: str) -> Indexing:
    """Retry the indexing of the current version (a save whose indexing failed
    or ran out of time); an indexed one answers at once. Refusal: `not_found`."""
    record = _record(ports, who, artifact_id)
    current = indexing_of(ports.catalog.source_status(who.scope, record.source_id))
    if current.state == "indexed" or record.current_version_id is None:
        return current
    return _index_version(ports, who, record.current_version_id)


def describe(
    ports: PlatformPorts, who: Principal, artifact_id: str, *, with_markdown: bool = True
) -> ArtifactView:
    """The manifest: files by role, title and Markdown read from the document."""
    return _describe(ports, who, _record(ports, who, artifact_id), with_markdown)


def list_artifacts(
    ports: PlatformPorts, who: Principal, cursor: str | None, limit: int
) -> tuple[list[ArtifactView], str | None]:
    """A page of the visible artifacts (without their Markdown) and the next cursor."""
    records, after = ports.artifacts.list_artifacts(who.scope, cursor, limit)
    return [_describe(ports, who, r, with_markdown=False) for r in records], after


def create(
    ports: PlatformPorts,
    who: Principal,
    *,
    path: str,
    markdown: str,
    provenance: Provenance,
    subjects: Sequence[str] | None = None,
    fmt: str = "markdown",
) -> ArtifactView:
    """A new artifact at generation 1, shared with `subjects` (the caller's own
    by default; a list must include one of them), its primary file in `fmt`
    (a registered renderer's format; an unknown one is refused naming them)."""
    saved = create_artifact(
        ports.catalog,
        ports.blobs,
        ports.artifacts,
        tenant_id=who.tenant_id,
        subjects=sharing_subjects(who, subjects),
        path=path,
        markdown=markdown,
        provenance=provenance,
        fmt=fmt,
    )
    indexing = _indexed_save(ports, who, saved).indexing
    return replace(
        describe(ports, who, saved.artifact_id), indexing=indexing or Indexing("pending")
    )


def history(ports: PlatformPorts, who: Principal, artifact_id: str) -> list[ArtifactVersion]:
    _record(ports, who, artifact_id)
    return ports.artifacts.versions(who.scope, artifact_id)


def restore(
    ports: PlatformPorts,
    who: Principal,
    artifact_id: str,
    *,
    expected_generation: int,
    generation: int,
    run: str,
) -> Saved:
    """A new version holding generation `generation`'s content. Refusals:
    `stale_generation` (with the current generation), `not_found`."""
    try:
        saved = restore_artifact(
            ports.catalog,
            ports.blobs,
            ports.artifacts,
            who.scope,
            artifact_id,
            expected_generation=expected_generation,
            generation=generation,
            run=run,
        )
    except StaleGenerationError as exc:
        raise _stale_generation(exc) from exc
    return _indexed_save(ports, who, saved)


def export(
    ports: PlatformPorts, who: Principal, artifact_id: str, generation: int, fmt: str
) -> Export:
    """Export a specific version. One record per (version, format): a second
    request, even a concurrent one and whichever transport it came through,
    gets the same file. Refusals: `not_found` (no such artifact or generation),
    `invalid` (a format no renderer owns: the message names the known ones)."""
    renderer_for(fmt)
    record = ports.artifacts.get(who.scope, artifact_id)
    version = next(
        (v for v in ports.artifacts.versions(who.scope, artifact_id) if v.generation == generation),
        None,
    )
    if record is None or version is None:
        raise Refused(
            f"no artifact {artifact_id} at generation {generation} is visible to this key",
            "check the artifact id and its generation (a revision returns it)",
            code="not_found",
        )
    row = export_version(
        ports.artifacts,
        ports.blobs,
        who.tenant_id,
        artifact_id,
        version,
        fmt,
        record.filename,
        secret=ports.approval_secret(),  # receipts carry their own kind: never an approval
        now=_now(),
    )
    file = ports.artifacts.file(who.scope, row["file_id"]) if row["file_id"] else None
    return Export(
        export_id=row["export_id"],
        artifact_id=artifact_id,
        generation=row["generation"],
        format=row["format"],
        state=row["state"],
        failure_reason=row["failure_reason"],
        unrenderable=tuple(row["unrenderable"] or ()),
        receipt=row.get("receipt"),
        file=file,
    )


def _rendered(exported: Export, alternative: str) -> ArtifactFile:
    if exported.file is None:
        raise Refused(exported.failure_reason or "render failed", alternative, code="render_failed")
    return exported.file


def create_pdf(
    ports: PlatformPorts,
    who: Principal,
    *,
    path: str,
    markdown: str,
    provenance: Provenance,
) -> tuple[ArtifactView, Export]:
    """An artifact and its first version's PDF. Refusal: `render_failed` (the
    Markdown is kept as the artifact; exporting again retries the render)."""
    made = create(ports, who, path=path, markdown=markdown, provenance=provenance)
    exported = export(ports, who, made.record.artifact_id, made.record.generation, "pdf")
    _rendered(
        exported,
        f"the Markdown is saved as artifact {made.record.artifact_id}; retry export_artifact",
    )
    return made, exported


def _readable(ports: PlatformPorts, file: ArtifactFile, artifact_path: str) -> ReadableFile:
    name = download_name(artifact_path, file.role, extension_for(file.format))
    return ReadableFile(file, lambda: ports.blobs.get(file.blob_key), name)


def read_file(ports: PlatformPorts, who: Principal, file_id: str) -> ReadableFile:
    """Immutable content by id; `source` files are never served."""
    found = ports.artifacts.file(who.scope, file_id)
    record = ports.artifacts.get(who.scope, found.artifact_id) if found else None
    if found is None or record is None or found.role not in USER_READABLE_ROLES:
        raise NotFound(f"no file {file_id} is visible to this key")
    return _readable(ports, found, record.filename)


def download(
    ports: PlatformPorts, who: Principal, artifact_id: str, fmt: str | None = None
) -> ReadableFile:
    """The current version: its primary file (no format, or the artifact's
    own), else exported to `fmt` once and then reused. Refusals:
    `render_failed` (a retry renders again), `invalid` (an unknown format)."""
    record = _record(ports, who, artifact_id)
    if fmt is None or fmt == record.format:
        files = ports.artifacts.files(who.scope, artifact_id, record.generation)
        primary = next((f for f in files if f.role == "primary"), None)
        if primary is not None:
            return _readable(ports, primary, record.filename)
        fmt = record.format
    exported = export(ports, who, artifact_id, record.generation, fmt)
    file = _rendered(exported, "retry the download; a failed render is redone")
    return _readable(ports, file, record.filename)


def delete(ports: PlatformPorts, who: Principal, artifact_id: str) -> ArtifactRecord:
    """Executes as a deletion of the artifact's document: unsearchable at once,
    purged by the deletion sweep (every blob its rows name); what earlier
    revisions superseded and could not purge yet is retried here first."""
    record = _record(ports, who, artifact_id)
    purge_superseded(ports.artifacts, ports.blobs, who.tenant_id, artifact_id)  # not the sweep's
    request_deletion(ports.catalog, ports.indexes(), who.tenant_id, record.source_id)
    return record


def revise(
    ports: PlatformPorts,
    who: Principal,
    artifact_id: str,
    *,
    expected_generation: int,
    provenance: Provenance,
    markdown: str | None = None,
    edits: Sequence[Edit] = (),
    approval_token: str | None = None,
    now: Clock = _now,
) -> Saved:
    """Refusals: `stale_generation` (with the current generation),
    `approval-required` (with destroys and proposal_token), `invalid`."""
    approved_digest: str | None = None
    if approval_token:
        grant = approvals.read(
            ports.approval_secret(), approval_token, "approval", who.tenant_id, now()
        )
        if isinstance(grant, approvals.TokenRefused):
            raise _token_refused(grant, "approval_token")
        if grant.artifact_id != artifact_id or grant.generation != expected_generation:
            raise _token_refused(approvals.TokenRefused("mismatch"), "approval_token")
        approved_digest = grant.digest
    try:
        outcome = revise_artifact(
            ports.catalog,
            ports.blobs,
            ports.artifacts,
            who.scope,
            artifact_id,
            expected_generation=expected_generation,
            provenance=provenance,
            markdown=markdown,
            edits=edits,
            approved_digest=approved_digest,
        )
    except StaleGenerationError as exc:
        raise _stale_generation(exc) from exc
    if isinstance(outcome, EditsRefused):
        if outcome.reason != "approval-required" or outcome.digest is None:
            raise Refused(outcome.message, "fix the edit and resubmit", code="invalid")
        proposal = approvals.propose(
            ports.approval_secret(),
            who.tenant_id,
            artifact_id,
            expected_generation,
            outcome.digest,
            who.key_id,
            now(),
        )
        raise Refused(
            outcome.message,
            "have a user holding artifacts:approve approve proposal_token "
            f"(POST /v1/artifacts/{artifact_id}/approve), then resubmit the same edits with "
            "the approval_token it returns; or use insert_section/append, which destroy nothing",
            {"destroys": list(outcome.destroys), "proposal_token": proposal},
            "approval_required",
        )
    return _indexed_save(ports, who, outcome)


def approve(
    ports: PlatformPorts, who: Principal, artifact_id: str, proposal_token: str, now: Clock = _now
) -> Approved:
    """Exchange a proposal for an approval (the caller holds artifacts:approve:
    the transports check it from the scope table before calling)."""
    grant = approvals.read(
        ports.approval_secret(), proposal_token, "proposal", who.tenant_id, now()
    )
    if isinstance(grant, approvals.TokenRefused):
        raise _token_refused(grant, "proposal_token")
    if grant.artifact_id != artifact_id:
        raise _token_refused(approvals.TokenRefused("mismatch"), "proposal_token")
    if ports.artifacts.get(who.scope, artifact_id) is None:
        raise Refused(
            f"no artifact {artifact_id} is visible to you",
            "check the artifact id",
            code="not_found",
        )
    approval = approvals.Grant(
        "approval",
        grant.tenant_id,
        grant.artifact_id,
        grant.generation,
        grant.digest,
        grant.proposer,
        who.key_id,
        now() + approvals.LIFETIME,
    )
    return Approved(
        approvals.issue(ports.approval_secret(), approval),
        artifact_id,
        grant.generation,
        grant.proposer,
        approval.expires_at,
    )
