"""Registration policy, once, for every entry point that makes a file: the
one-shot API body, conversions and PDF operations, and the tools.

The policy: the extension is on the allow-list and the size within the limit
before any byte is kept; the sniffed content is exactly a type that extension
allows; the malware scan runs when it is on; replacing a source's content
needs explicit approval; and the subjects a file is shared with include one
of the caller's own (a caller cannot hand a file to others only).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from groundwork.catalog import NeedsApproval
from groundwork.errors import Refused
from groundwork.ports import Principal
from groundwork.services.limits import check_quota
from groundwork.services.platform import PlatformPorts
from groundwork.stages.registration import IncomingFile, register_incoming
from groundwork.upload_policy import UploadRefused, accepted_summary, check_content, check_declared

#: one-shot bodies are buffered; anything larger goes through upload sessions
MAX_DIRECT_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Registered:
    source_id: str
    version_id: str
    created: bool
    media_type: str


def refusal(refused: UploadRefused) -> Refused:
    alternative = f"send a file of an accepted type ({accepted_summary()})"
    if refused.reason == "too-large":
        alternative = "send larger files through /v1/uploads (resumable sessions)"
    return Refused(refused.message, alternative, {"accepted": accepted_summary()}, refused.reason)


def approval_refusal(filename: str, needs: NeedsApproval) -> Refused:
    return Refused(
        f"{filename} already holds other content as version {needs.current_version_no} of "
        f"source {needs.source_id}",
        "send replace_existing=true to add this as its next version (the previous one stays "
        f"readable through /v1/sources/{needs.source_id}/versions), or use another filename",
        {"source_id": needs.source_id},
        "approval-required",
    )


def malware_refusal(signature: str) -> Refused:
    return Refused(
        f"the malware scan found {signature}; the file is quarantined and will not be processed",
        "upload a clean copy",
        code="malware-found",
    )


def sharing_subjects(who: Principal, requested: Sequence[str] | None) -> tuple[str, ...]:
    """Who a new file is shared with: the caller's own subjects by default; a
    requested list must include at least one of them."""
    subjects = tuple(requested) if requested else who.subjects
    if not set(subjects) & set(who.subjects):
        raise Refused(
            "subjects must include at least one of the caller's own",
            f"include one of {', '.join(who.subjects)} or leave subjects out",
            code="invalid",
        )
    return subjects


def check_before_bytes(filename: str, declared_size: int, limit: int = MAX_DIRECT_BYTES) -> None:
    refused = check_declared(filename, declared_size, limit)
    if refused is not None:
        raise refusal(refused)


def register_bytes(
    ports: PlatformPorts,
    who: Principal,
    filename: str,
    data: bytes,
    *,
    subjects: Sequence[str] | None = None,
    replace_existing: bool = False,
    limit: int = MAX_DIRECT_BYTES,
) -> Registered:
    """Register a file held in memory under the whole policy; refusals are
    `Refused` with codes too-large, unsupported-type, type-mismatch,
    approval-required, malware-found, invalid or quota_exceeded (the tenant's
    documents or bytes, checked before any byte is kept)."""
    check_before_bytes(filename, len(data), limit)
    shared_with = sharing_subjects(who, subjects)
    check_quota(ports.catalog, who.tenant_id, len(data), f"api:{filename}")
    media_type = ports.sniff_media_type(data, filename)
    refused = check_content(filename, media_type)
    if refused is not None:
        raise refusal(refused)
    outcome = register_incoming(
        ports.catalog,
        ports.blobs,
        IncomingFile(
            who.tenant_id,
            f"api:{filename}",
            filename,
            shared_with,
            media_type,
            replace=replace_existing,
        ),
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        write=lambda key: ports.blobs.put(key, data),
        scanner=ports.scanner(),
    )
    if isinstance(outcome, NeedsApproval):
        raise approval_refusal(filename, outcome)
    if outcome.quarantined is not None:
        raise malware_refusal(outcome.quarantined)
    if outcome.created:
        ports.ingest_trigger().request_ingest(who.tenant_id)
    return Registered(outcome.source_id, outcome.version_id, outcome.created, media_type)


def register_stream(
    ports: PlatformPorts,
    who: Principal,
    filename: str,
    declared_size: int | None,
    parts: Iterable[bytes],
    *,
    subjects: Sequence[str] | None = None,
    replace_existing: bool = False,
) -> Registered:
    """One-shot registration of a small file arriving in parts: refused before
    a byte is kept when the declared size or the name fails the policy, and as
    soon as the bytes pass MAX_DIRECT_BYTES (the sender is stopped, not drained);
    then `register_bytes`. Larger files go through upload sessions."""
    check_before_bytes(filename, declared_size or 0)
    sharing_subjects(who, subjects)
    check_quota(ports.catalog, who.tenant_id, declared_size or 0, f"api:{filename}")
    received = bytearray()
    for part in parts:
        received.extend(part)
        if len(received) > MAX_DIRECT_BYTES:
            check_before_bytes(filename, len(received))
    return register_bytes(
        ports,
        who,
        filename,
        bytes(received),
        subjects=subjects,
        replace_existing=replace_existing,
    )
