"""Resumable upload sessions: who may open one and who may touch it.

A session belongs to the key that opened it: only that key (or a key holding
sources:admin) can read its progress, send parts or complete it. Anyone else,
in the same tenant or not, gets not-found, the same answer as for a session
that does not exist, so a session's filename and resulting source id are never
an oracle for others.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from groundwork.catalog import NeedsApproval
from groundwork.errors import NotFound, Refused
from groundwork.ports import AccessScope, Principal
from groundwork.services.platform import PlatformPorts
from groundwork.services.registration import (
    approval_refusal,
    check_before_bytes,
    malware_refusal,
    refusal,
    sharing_subjects,
)
from groundwork.services.scopes import Scope
from groundwork.stages.registration import IncomingFile, register_path
from groundwork.upload_policy import MAX_UPLOAD_BYTES, check_content


class UploadSessions(Protocol):
    def create_upload(
        self,
        scope: AccessScope,
        key_id: str,
        filename: str,
        size: int,
        declared_type: str,
        subjects: Sequence[str],
        target_source_id: str | None = None,
    ) -> str: ...

    def upload(self, tenant_id: str, upload_id: str) -> dict[str, Any] | None: ...

    def finish_upload(
        self, upload_id: str, state: str, source_id: str | None, version_id: str | None
    ) -> None: ...


class StagedUploads(Protocol):
    """The bytes of open sessions, held by the server until completion."""

    def ensure(self, upload_id: str) -> Path:
        """The staged file of a session (created empty if no part arrived)."""
        ...

    def discard(self, upload_id: str) -> None: ...


def open_session(
    ports: PlatformPorts,
    sessions: UploadSessions,
    who: Principal,
    *,
    filename: str,
    size: int,
    declared_type: str,
    subjects: Sequence[str] | None,
    target_source_id: str | None,
) -> dict[str, Any]:
    """Refused before any byte: size and extension, sharing subjects, and a
    target source the caller can see."""
    check_before_bytes(filename, size, MAX_UPLOAD_BYTES)
    shared_with = sharing_subjects(who, subjects)
    if target_source_id is not None and ports.files.origin_of(who.scope, target_source_id) is None:
        raise NotFound(f"no source {target_source_id} is visible to this key")
    upload_id = sessions.create_upload(
        who.scope,
        who.key_id,
        filename,
        size,
        declared_type,
        shared_with,
        target_source_id=target_source_id,
    )
    row = sessions.upload(who.tenant_id, upload_id)
    assert row is not None
    return row


def owned_session(sessions: UploadSessions, who: Principal, upload_id: str) -> dict[str, Any]:
    row = sessions.upload(who.tenant_id, upload_id)
    if row is None or (row["key_id"] != who.key_id and Scope.ADMIN.value not in who.scopes):
        raise NotFound(f"no upload {upload_id}")
    return row


def complete_session(
    ports: PlatformPorts,
    sessions: UploadSessions,
    staging: StagedUploads,
    who: Principal,
    upload_id: str,
    *,
    replace_existing: bool,
) -> dict[str, Any]:
    """Sniff, check, scan and register the staged bytes (streamed from disk,
    never held in memory) under the same policy as every other registration;
    then ask for the ingest run. Completing a completed session answers it
    again. Refusals: not-open, incomplete, the content codes, approval-required
    (the session stays open: complete again with `replace_existing`) and
    malware-found."""
    row = owned_session(sessions, who, upload_id)
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
    path = staging.ensure(upload_id)
    filename = str(row["filename"])
    sniffed = ports.sniff_file(path, filename)
    refused = check_content(filename, sniffed)
    if refused is not None:
        sessions.finish_upload(upload_id, "refused", None, None)
        staging.discard(upload_id)
        raise refusal(refused)
    origin = f"api:{filename}"
    if row.get("target_source_id"):
        target = ports.files.origin_of(who.scope, str(row["target_source_id"]))
        if target is None:
            raise NotFound(f"no source {row['target_source_id']} is visible to this key")
        origin = target[0]
    incoming = IncomingFile(
        tenant_id=who.tenant_id,
        origin=origin,
        filename=filename,
        subjects=tuple(row["subjects"]),
        media_type=sniffed,
        declared_type=str(row["declared_type"]),
        replace=replace_existing,
    )
    outcome = register_path(ports.catalog, ports.blobs, incoming, path, ports.scanner())
    if isinstance(outcome, NeedsApproval):
        raise approval_refusal(filename, outcome)
    if outcome.quarantined is not None:
        sessions.finish_upload(upload_id, "refused", outcome.source_id, outcome.version_id)
        staging.discard(upload_id)
        raise malware_refusal(outcome.quarantined)
    sessions.finish_upload(upload_id, "completed", outcome.source_id, outcome.version_id)
    staging.discard(upload_id)
    if outcome.created:
        ports.ingest_trigger().request_ingest(who.tenant_id)
    done = sessions.upload(who.tenant_id, upload_id)
    assert done is not None
    return done
