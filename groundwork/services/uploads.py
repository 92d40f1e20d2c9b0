"""Resumable upload sessions: who may open one and who may touch it.

A session belongs to the key that opened it: only that key (or a key holding
sources:admin) can read its progress, send parts or complete it. Anyone else,
in the same tenant or not, gets not-found, the same answer as for a session
that does not exist, so a session's filename and resulting source id are never
an oracle for others.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from groundwork.catalog import NeedsApproval
from groundwork.errors import NotFound, Refused
from groundwork.ports import Principal
from groundwork.services.limits import check_quota
from groundwork.services.platform import PlatformPorts, UploadSessions
from groundwork.services.registration import (
    approval_refusal,
    check_before_bytes,
    malware_refusal,
    refusal,
    sharing_subjects,
)
from groundwork.services.scopes import Scope
from groundwork.stages.registration import IncomingFile, register_incoming
from groundwork.upload_policy import MAX_UPLOAD_BYTES, check_content
from groundwork.upload_staging import StagedTooLarge, UploadStaging

#: an upload session's life (upload_sessions.expires_at is created_at + 24 hours)
SESSION_LIFE = timedelta(hours=24)


def discard_expired(staging: UploadStaging) -> int:
    """The staged bytes of sessions past their life (abandoned: nothing can
    complete them any more), S3 multipart uploads aborted; how many went."""
    return staging.expire(SESSION_LIFE)


def open_session(
    ports: PlatformPorts,
    who: Principal,
    *,
    filename: str,
    size: int,
    declared_type: str,
    subjects: Sequence[str] | None,
    target_source_id: str | None,
) -> dict[str, Any]:
    """Refused before any byte: size and extension, sharing subjects, a
    target source the caller can see, and the tenant's quotas."""
    check_before_bytes(filename, size, MAX_UPLOAD_BYTES)
    shared_with = sharing_subjects(who, subjects)
    origin = _origin(ports, who, filename, target_source_id)
    check_quota(ports.catalog, who.tenant_id, size, origin)
    sessions: UploadSessions = ports.catalog
    upload_id = sessions.create_upload(
        who.scope,
        who.key_id,
        filename,
        size,
        declared_type,
        shared_with,
        target_source_id=target_source_id,
    )
    ports.upload_staging().begin(who.tenant_id, upload_id)
    row = sessions.upload(who.tenant_id, upload_id)
    assert row is not None
    return row


def _origin(
    ports: PlatformPorts, who: Principal, filename: str, target_source_id: str | None
) -> str:
    """A new source's origin, or the one of the source a new version targets."""
    if target_source_id is None:
        return f"api:{filename}"
    target = ports.files.origin_of(who.scope, str(target_source_id))
    if target is None:
        raise NotFound(f"no source {target_source_id} is visible to this key")
    return target[0]


def owned_session(ports: PlatformPorts, who: Principal, upload_id: str) -> dict[str, Any]:
    row = ports.catalog.upload(who.tenant_id, upload_id)
    if row is None or (row["key_id"] != who.key_id and Scope.ADMIN.value not in who.scopes):
        raise NotFound(f"no upload {upload_id}")
    return row


def receive_part(
    ports: PlatformPorts,
    who: Principal,
    upload_id: str,
    offset: int,
    parts: Iterable[bytes],
    length: int | None = None,
) -> dict[str, Any]:
    """Bytes from `offset`, the acknowledged offset (resume from the session's
    `received`), written at that offset so a retried part overwrites instead
    of appending twice. The part is capped at the declared size while it
    arrives: exceeding it stops the sender (`too-large`) and keeps nothing past
    `offset`. Durable before it is acknowledged. `length`: the request's
    Content-Length, when it has one (a bucket then receives the part as it
    streams in). Refusals: `not-open`,
    `bad-offset` (with `received`), `too-large`."""
    row = owned_session(ports, who, upload_id)
    if row["state"] != "open":
        raise Refused(
            f"the upload is {row['state']}", "start a new upload session", code="not-open"
        )
    if offset != row["received"]:
        raise Refused(
            f"send bytes from offset {row['received']} (the last acknowledged byte)",
            f"resume from offset {row['received']}",
            {"received": row["received"]},
            "bad-offset",
        )
    room = int(row["declared_size"]) - offset
    staging: UploadStaging = ports.upload_staging()
    try:
        written = staging.write(who.tenant_id, upload_id, offset, parts, room=room, length=length)
    except StagedTooLarge:
        raise Refused(
            f"the upload exceeded its declared size of {row['declared_size']} bytes; "
            f"nothing past offset {offset} was kept",
            "declare the file's real size in a new upload session",
            code="too-large",
        ) from None
    if not ports.catalog.advance_upload(upload_id, offset, offset + written):
        raise Refused(
            "another part was acknowledged meanwhile; read the progress and resume",
            "read the upload's progress and resume from its received offset",
            code="bad-offset",
        )
    staging.acknowledged(who.tenant_id, upload_id, offset + written)
    updated = ports.catalog.upload(who.tenant_id, upload_id)
    assert updated is not None
    return updated


def cancel_session(ports: PlatformPorts, who: Principal, upload_id: str) -> dict[str, Any]:
    """The sender gives up: the session takes no more parts and never
    completes, and its staged bytes go now (the folder's file deleted, a
    bucket's multipart upload aborted) rather than at the 24-hour expiry.
    Cancelling a cancelled session answers it again. A completed one is a
    source by then: refused (`already-completed`), the source is deleted
    instead. A part still streaming when the cancel lands is refused at its
    acknowledgement; bytes it staged after the discard are swept with the
    expired sessions (and reported by reconciliation as staged meanwhile)."""
    sessions: UploadSessions = ports.catalog
    row = owned_session(ports, who, upload_id)
    if row["state"] == "completed":
        raise Refused(
            "the upload is completed: it is source " + str(row.get("source_id")),
            f"DELETE /v1/sources/{row.get('source_id')} to remove what it registered",
            {"source_id": row.get("source_id")},
            "already-completed",
        )
    if row["state"] == "open" and not sessions.cancel_upload(upload_id):
        return cancel_session(ports, who, upload_id)  # completed or cancelled meanwhile
    ports.upload_staging().discard(who.tenant_id, upload_id)
    cancelled = sessions.upload(who.tenant_id, upload_id)
    assert cancelled is not None
    return cancelled


def complete_session(
    ports: PlatformPorts,
    who: Principal,
    upload_id: str,
    *,
    replace_existing: bool,
) -> dict[str, Any]:
    """Sniff, check, scan and register the staged bytes (read where they are
    staged, never held in memory; in a bucket they are copied server-side to
    the content key) under the same policy as every other registration;
    then ask for the ingest run. Completing a completed session answers it
    again. Refusals: not-open, incomplete, the content codes, approval-required
    (the session stays open: complete again with `replace_existing`) and
    malware-found."""
    sessions: UploadSessions = ports.catalog
    staging: UploadStaging = ports.upload_staging()
    row = owned_session(ports, who, upload_id)
    if row["state"] == "completed":
        return row
    if row["state"] != "open":
        raise Refused(
            f"the upload is {row['state']}", "start a new upload session", code="not-open"
        )
    if row["received"] != row["declared_size"]:
        raise Refused(
            f"{row['received']} of {row['declared_size']} bytes received",
            f"resume from offset {row['received']}, then complete",
            {"received": row["received"]},
            "incomplete",
        )
    sealed = staging.seal(who.tenant_id, upload_id, int(row["declared_size"]))
    filename = str(row["filename"])
    with staging.open(who.tenant_id, upload_id) as staged:
        sniffed = ports.sniff_file(staged, filename)
    refused = check_content(filename, sniffed)
    if refused is not None:
        sessions.finish_upload(upload_id, "refused", None, None)
        staging.discard(who.tenant_id, upload_id)
        raise refusal(refused)
    origin = _origin(ports, who, filename, row.get("target_source_id") or None)
    # checked again: other registrations may have used the quota since it opened
    # (refused, the session stays open: complete it after freeing room)
    check_quota(ports.catalog, who.tenant_id, int(row["declared_size"]), origin)
    incoming = IncomingFile(
        tenant_id=who.tenant_id,
        origin=origin,
        filename=filename,
        subjects=tuple(row["subjects"]),
        media_type=sniffed,
        declared_type=str(row["declared_type"]),
        replace=replace_existing,
    )
    outcome = register_incoming(
        ports.catalog,
        ports.blobs,
        incoming,
        sha256=sealed.sha256,
        size=sealed.size,
        # pending row -> the staged bytes placed under the content key -> stored
        write=lambda key: staging.place(who.tenant_id, upload_id, key),
        scanner=ports.scanner(),
    )
    if isinstance(outcome, NeedsApproval):
        raise approval_refusal(filename, outcome)
    if outcome.quarantined is not None:
        sessions.finish_upload(upload_id, "refused", outcome.source_id, outcome.version_id)
        staging.discard(who.tenant_id, upload_id)
        raise malware_refusal(outcome.quarantined)
    sessions.finish_upload(upload_id, "completed", outcome.source_id, outcome.version_id)
    staging.discard(who.tenant_id, upload_id)
    if outcome.created:
        ports.ingest_trigger().request_ingest(who.tenant_id)
    done = sessions.upload(who.tenant_id, upload_id)
    assert done is not None
    return done
