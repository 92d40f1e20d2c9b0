"""An artifact's files by role, and their blobs' lifecycle.

A version has a *primary* file (the deliverable, rendered by its format's
adapter), an HTML *preview* (unless the primary is HTML) and a private
*source* (what generated it; never listed, linked or served). Each role has its
size limit. The write order of a revision: render every role (pure), stage the
blobs, swap the current role rows and queue the superseded blobs in the one
commit that moves the generation, then purge the queue after the commit. A
writer that loses the compare-and-set removes what it staged (`discard_staged`),
so it leaves no blob and no document version behind. A purge removes a blob
only when no row of any tenant still names it (content addressing shares
identical bytes), and a failing delete stays queued, reported and retried,
without stopping the other purges.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from groundwork.errors import GroundworkError, InvalidRequest
from groundwork.extract.markdown import markdown_blocks
from groundwork.ports import BlobStore
from groundwork.render.fidelity import verify_rendering
from groundwork.render.renderers import Draft, renderer_for
from groundwork.stages.registration import blob_key_for

MIB = 1024 * 1024
#: bytes per file, by role: a deliverable may be large, what generated it may not
ROLE_LIMITS: dict[str, int] = {
    "primary": 50 * MIB,
    "preview": 20 * MIB,
    "source": 4 * MIB,
    "export": 50 * MIB,
}


@dataclass(frozen=True, slots=True)
class NewFile:
    role: str
    format: str
    media_type: str
    blob_key: str
    sha256: str
    size_bytes: int


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def put_content(blobs: BlobStore, data: bytes) -> tuple[str, str]:
    """Store bytes content-addressed, as registration does; (key, sha256)."""
    digest = _sha(data)
    key = blob_key_for(digest)
    blobs.put(key, data)
    return key, digest


def size_problem(role: str, size: int, limits: Mapping[str, int] | None = None) -> str | None:
    """Why a file of `size` bytes may not be stored in `role`, or None."""
    limit = (ROLE_LIMITS if limits is None else limits).get(role)
    if limit is not None and size > limit:
        return f"the {role} file is {size} bytes; a {role} file holds at most {limit}"
    return None


@dataclass(frozen=True, slots=True)
class RenderedRole:
    role: str
    format: str
    media_type: str
    data: bytes


def render_roles(
    fmt: str, title: str, markdown: str, provenance: dict[str, Any], edits: Sequence[object]
) -> list[RenderedRole]:
    """primary (the deliverable, from the format's adapter), preview (HTML, for
    a primary that is not itself HTML) and source (what generated it: never
    user-readable). Pure: nothing is stored until every role rendered, passed
    its read-back and fits its size limit."""
    adapter = renderer_for(fmt)
    blocks = markdown_blocks(markdown)
    draft = Draft(title, markdown, blocks)
    primary = adapter.render(draft)
    if adapter.read_back:
        receipt = verify_rendering(
            blocks, primary.data, adapter.media_type, f"x{adapter.extension}", primary.unrenderable
        )
        if not receipt.passed:
            raise InvalidRequest(f"the {fmt} rendering lost {list(receipt.missing[:5])}")
    roles = [RenderedRole("primary", fmt, adapter.media_type, primary.data)]
    if fmt != "html":
        preview = renderer_for("html").render(draft)
        roles.append(RenderedRole("preview", "html", preview.media_type, preview.data))
    source = json.dumps(
        {"format": fmt, "provenance": provenance, "edits": [repr(e) for e in edits]},
        sort_keys=True,
        ensure_ascii=False,
    ).encode()
    roles.append(RenderedRole("source", "json", "application/json", source))
    for r in roles:
        problem = size_problem(r.role, len(r.data))
        if problem:
            raise InvalidRequest(problem)
    return roles


def stage_roles(blobs: BlobStore, roles: Sequence[RenderedRole]) -> list[NewFile]:
    """Every blob before the row that names it (content-addressed, so a blob
    shared with another version is the same key)."""
    files = []
    for r in roles:
        key, digest = put_content(blobs, r.data)
        files.append(NewFile(r.role, r.format, r.media_type, key, digest, len(r.data)))
    return files


class BlobPurges(Protocol):
    """The purge queue of superseded role blobs (part of ArtifactStore).

    Contract: `commit_version` queues the previous generation's role blobs in
    its own transaction; `queued_purges` lists a tenant's queue (one
    artifact's, or all); `blob_referenced` says whether any row of any tenant
    still names the key; `finish_purge` drops a key's row (error None) or
    records the failure and counts the attempt; `discard_version` removes a
    document version that never became current nor an artifact version (a
    writer that lost the compare-and-set) and answers its blob key.
    """

    def queued_purges(self, tenant_id: str, artifact_id: str | None = None) -> list[str]: ...

    def blob_referenced(self, blob_key: str) -> bool: ...

    def finish_purge(self, tenant_id: str, blob_key: str, error: str | None) -> None: ...

    def discard_version(self, tenant_id: str, source_id: str, version_id: str) -> str | None: ...


DELETE_TRIES = 3


def _delete(blobs: BlobStore, key: str) -> str | None:
    """None once the object is gone; else why the last try failed."""
    reason = ""
    for _ in range(DELETE_TRIES):
        try:
            blobs.delete(key)
            return None
        except GroundworkError as exc:
            reason = str(exc) or type(exc).__name__
    return reason


def purge_superseded(
    store: BlobPurges, blobs: BlobStore, tenant_id: str, artifact_id: str | None = None
) -> tuple[str, ...]:
    """Purge the queue (one artifact's, or the tenant's); answers the failures
    as "key: reason" (each stays queued for the next purge; the others go on)."""
    failures: list[str] = []
    for key in store.queued_purges(tenant_id, artifact_id):
        reason = None if store.blob_referenced(key) else _delete(blobs, key)
        store.finish_purge(tenant_id, key, reason)
        if reason is not None:
            failures.append(f"{key}: {reason}"[:300])
    return tuple(failures)


def discard_staged(
    store: BlobPurges,
    blobs: BlobStore,
    tenant_id: str,
    source_id: str,
    version_id: str | None,
    staged: Sequence[NewFile],
) -> None:
    """What a writer that lost the compare-and-set had staged goes: its
    document version (when this writer made it) and every blob no row names."""
    keys = [f.blob_key for f in staged]
    if version_id is not None:
        version_key = store.discard_version(tenant_id, source_id, version_id)
        if version_key is not None:
            keys.append(version_key)
    for key in dict.fromkeys(keys):
        if not store.blob_referenced(key):
            _delete(blobs, key)
