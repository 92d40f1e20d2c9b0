"""Reconciliation of the catalog with the blob store, both directions.

It reports and never deletes: a pending row without bytes may be a write that
is still in flight, and bytes without a row may belong to a registration that
is about to commit. What to do is an operator's decision (the report says how
old each finding is).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from groundwork.ports import BlobStore
from groundwork.upload_staging import UploadStaging


class _VersionBlobs(Protocol):
    def version_blobs(self) -> list[dict[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str  # pending-without-bytes, pending-with-bytes, stored-without-bytes, bytes-without-row,
    # quarantined (a malware scan flagged it: kept, never served; listed for an operator),
    # incomplete-write (a put that never finished: an S3 multipart upload, a temp file),
    # staged-upload (an upload session's bytes before completion: its S3 multipart
    # upload and tail objects, or its file; an expired session's until expiry removes them)
    version_id: str | None
    blob_key: str
    age_seconds: float | None


@dataclass(frozen=True, slots=True)
class ReconciliationReport:
    findings: tuple[Finding, ...] = field(default_factory=tuple)

    def count(self, kind: str) -> int:
        return sum(1 for f in self.findings if f.kind == kind)

    @property
    def integrity_ok(self) -> bool:
        """Stored versions must have their bytes; everything else can be a write in flight."""
        return self.count("stored-without-bytes") == 0


def reconcile(
    catalog: _VersionBlobs, blobs: BlobStore, staging: UploadStaging | None = None
) -> ReconciliationReport:
    """`staging`: upload sessions' bytes are reported as `staged-upload` (with
    their age), not as orphans, though in a bucket they share its keys."""
    staged = list(staging.staged()) if staging is not None else []
    claimed = {item.key for item in staged}
    present = set(blobs.list_keys()) - claimed
    referenced: set[str] = set()
    findings: list[Finding] = []
    for row in catalog.version_blobs():
        key = row["blob_key"]
        referenced.add(key)
        has_bytes = key in present
        if row["state"] == "pending":
            kind = "pending-with-bytes" if has_bytes else "pending-without-bytes"
            findings.append(Finding(kind, row["version_id"], key, float(row["age_seconds"])))
        elif row["state"] == "quarantined":
            findings.append(
                Finding("quarantined", row["version_id"], key, float(row["age_seconds"]))
            )
        elif row["state"] == "stored" and not has_bytes:
            findings.append(
                Finding("stored-without-bytes", row["version_id"], key, float(row["age_seconds"]))
            )
    for key in sorted(present - referenced):
        findings.append(Finding("bytes-without-row", None, key, None))
    # stored bytes no listing of objects shows (a process killed mid-upload):
    # reported like orphans, and like them never removed here
    for key in blobs.incomplete_writes():
        if key not in claimed:
            findings.append(Finding("incomplete-write", None, key, None))
    for item in staged:
        findings.append(Finding("staged-upload", None, item.key, item.age_seconds))
    return ReconciliationReport(tuple(findings))
