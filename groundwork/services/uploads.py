"""Resumable upload sessions: who may open one and who may touch it.

A session belongs to the key that opened it: only that key (or a key holding
sources:admin) can read its progress, send parts or complete it. Anyone else,
in the same tenant or not, gets not-found, the same answer as for a session
that does not exist, so a session's filename and resulting source id are never
an oracle for others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from groundwork.errors import NotFound
from groundwork.ports import AccessScope, Principal
from groundwork.services.platform import PlatformPorts
from groundwork.services.registration import check_before_bytes, sharing_subjects
from groundwork.services.scopes import Scope
from groundwork.uploads import MAX_UPLOAD_BYTES


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
