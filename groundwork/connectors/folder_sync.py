"""The folder connector: mirror a tenant's inbox folder into the catalog.

A new file is registered, changed bytes become a new version, unchanged files
are skipped, and a file gone from the folder is deleted through the deletion
path — unless the scan hit its bound and so cannot tell a missing file from an
unscanned one. Rerunning it changes nothing.

A rescan does not read what did not change: each file's stat signature
(size, mtime_ns, inode) is kept with its source when the file is read, and a
file whose signature still matches, whose read produced the source's current
version, and whose last read is younger than `VERIFY_AFTER_SECONDS` is skipped
unread (the hourly rescan of a 5,183-file tenant read and hashed every file,
20 s, to find nothing). An edit that keeps size and mtime (a tool restoring
the mtime in place) is invisible to the signature: the verification read each
file gets once a day finds it. A replacement renamed over a file has a new
inode and is read at once; a file written moments before its read is read
again by the next scan (`RACY_WINDOW_NS`).

Each sync records what it walked (the folder's fingerprint, as the inbox
sensor computes it) and whether it left files to try again (refused by the
quota), so the hourly rescan asks for a run only when the folder changed
since, files wait for the quota, or reads are due (groundwork.connectors.rescan).

A tenant's quotas apply here as to uploads: `quota` (the service's check) is
asked before a new file, or a changed one, is read; a file it refuses is not
registered, stays in the inbox as it is, and its refusal (naming the limit)
is in the report, so the next rescan registers it once the limit allows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from groundwork.catalog import Catalog
from groundwork.connectors.inbox import (
    MAX_FILE_BYTES,
    MAX_FILES_PER_SCAN,
    Fingerprint,
    InboxFile,
    scan_tenant_inbox,
)
from groundwork.errors import Refused
from groundwork.lifecycle import Indexes, change_subjects, request_deletion
from groundwork.ports import BlobStore, MalwareScanner
from groundwork.stages.registration import register_file

Sniffer = Callable[[bytes, str], str]
#: the tenant's quota check: (bytes, origin) -> None, or raises Refused naming the limit
QuotaCheck = Callable[[int, str], None]

#: how long a file's stat signature is trusted without reading it: once a day
#: every inbox file is read and hashed again (the hidden-edit bound), which
#: for the 5,183-file tenant is the 20 s a rescan used to cost every hour
VERIFY_AFTER_SECONDS = 24 * 3600.0
#: a signature taken this close to its file's mtime is not trusted (git's
#: "racy" rule): timestamps are coarse (milliseconds on local disks, up to
#: seconds on network mounts), so a same-size rewrite just after the read may
#: keep the mtime; such a file is read again by the next scan
RACY_WINDOW_NS = 3_000_000_000
#: "every read ever recorded", for the quota's question: was this file read as it is now?
_EVER = 100 * 365 * 24 * 3600.0


@dataclass(slots=True)
class SyncReport:
    created: int = 0
    unchanged: int = 0
    unread: int = 0  # of the unchanged: skipped by their stat signature
    removed: int = 0
    rescoped: int = 0
    refused: list[str] = field(default_factory=list)  # "path: reason"
    quarantined: list[str] = field(default_factory=list)  # "path: signature"
    over_quota: int = 0  # of the refused: by the tenant's quota
    fingerprint: str = ""  # of the folder as walked (groundwork.connectors.inbox)


def sync_inbox(
    catalog: Catalog,
    blobs: BlobStore,
    indexes: Indexes,
    root: Path,
    tenant_id: str,
    sniff: Sniffer,
    max_file_bytes: int = MAX_FILE_BYTES,
    scanner: MalwareScanner | None = None,
    verify_after_seconds: float = VERIFY_AFTER_SECONDS,
    quota: QuotaCheck | None = None,
) -> SyncReport:
    report = SyncReport()
    seen: set[str] = set()
    scanned = 0
    known = catalog.inbox_sources(tenant_id)
    trusted = catalog.inbox_stat_signatures(tenant_id, verify_after_seconds)
    reads: dict[str, tuple[str, str]] = {}
    # a verification read of a file as it was last read adds nothing: never refused
    as_read = catalog.inbox_stat_signatures(tenant_id, _EVER) if quota is not None else {}
    walk = Fingerprint()
    for item in scan_tenant_inbox(root, tenant_id):
        scanned += 1
        walk.add(item)
        origin = f"inbox:{item.relative}"
        seen.add(origin)
        if item.size > max_file_bytes:
            report.refused.append(
                f"{item.relative}: {item.size} bytes is over the {max_file_bytes} limit"
            )
            continue
        before = known.get(origin)
        if before is not None and trusted.get(origin) == item.stat_signature:
            report.unchanged += 1
            report.unread += 1
            _rescope_if_changed(catalog, indexes, tenant_id, before, item.subjects, report)
            continue
        if quota is not None and as_read.get(origin) != item.stat_signature:
            refusal = _over_quota(quota, item, origin)
            if refusal is not None:
                report.refused.append(refusal)
                report.over_quota += 1
                continue
        data = item.path.read_bytes()
        registration = register_file(
            catalog,
            blobs,
            tenant_id=tenant_id,
            origin=origin,
            filename=item.relative,
            data=data,
            subjects=item.subjects,
            media_type=sniff(data, item.relative),
            scanner=scanner,
        )
        if registration.quarantined is not None:
            report.quarantined.append(f"{item.relative}: {registration.quarantined}")
            continue
        if registration.created:
            report.created += 1
        else:
            report.unchanged += 1
        if time.time_ns() - item.mtime_ns >= RACY_WINDOW_NS:
            reads[registration.source_id] = (item.stat_signature, registration.version_id)
        if before is not None:
            _rescope_if_changed(catalog, indexes, tenant_id, before, item.subjects, report)
    # after the registrations they describe: a crash before this costs one more read
    catalog.record_inbox_reads(tenant_id, reads)
    if scanned < MAX_FILES_PER_SCAN:
        for origin, (source_id, _) in known.items():
            if origin not in seen:
                request_deletion(catalog, indexes, tenant_id, source_id)
                report.removed += 1
    # last, after everything it describes: a crash before this costs the next
    # hourly rescan one run that finds what this one did
    report.fingerprint = walk.value
    catalog.record_inbox_scan(tenant_id, report.fingerprint, report.over_quota > 0)
    return report


def _over_quota(quota: QuotaCheck, item: InboxFile, origin: str) -> str | None:
    try:
        quota(item.size, origin)
    except Refused as refused:
        return (
            f"{item.relative}: {refused.message.removesuffix('; nothing was stored')}; "
            f"the file stays in the inbox, registered by the next rescan once the limit "
            f"allows ({refused.alternative})"
        )
    return None


def _rescope_if_changed(
    catalog: Catalog,
    indexes: Indexes,
    tenant_id: str,
    before: tuple[str, tuple[str, ...]],
    subjects: tuple[str, ...],
    report: SyncReport,
) -> None:
    """A `.subjects` edit changes who may read the files below it even when
    their bytes (and stat) did not change: the catalog and both indexes move together."""
    source_id, known_subjects = before
    if tuple(sorted(known_subjects)) != tuple(sorted(subjects)):
        change_subjects(catalog, indexes, tenant_id, source_id, subjects)
        report.rescoped += 1
