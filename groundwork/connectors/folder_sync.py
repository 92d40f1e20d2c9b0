"""The folder connector: mirror a tenant's inbox folder into the catalog.

A new file is registered, changed bytes become a new version, unchanged files
are skipped, and a file gone from the folder is deleted through the deletion
path — unless the scan hit its bound and so cannot tell a missing file from an
unscanned one. Rerunning it changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from groundwork.catalog import Catalog
from groundwork.connectors.inbox import MAX_FILE_BYTES, MAX_FILES_PER_SCAN, scan_tenant_inbox
from groundwork.lifecycle import Indexes, change_subjects, request_deletion
from groundwork.ports import BlobStore, MalwareScanner
from groundwork.stages.registration import register_file

Sniffer = Callable[[bytes, str], str]


@dataclass(slots=True)
class SyncReport:
    created: int = 0
    unchanged: int = 0
    removed: int = 0
    rescoped: int = 0
    refused: list[str] = field(default_factory=list)  # "path: reason"
    quarantined: list[str] = field(default_factory=list)  # "path: signature"


def sync_inbox(
    catalog: Catalog,
    blobs: BlobStore,
    indexes: Indexes,
    root: Path,
    tenant_id: str,
    sniff: Sniffer,
    max_file_bytes: int = MAX_FILE_BYTES,
    scanner: MalwareScanner | None = None,
) -> SyncReport:
    report = SyncReport()
    seen: set[str] = set()
    scanned = 0
    known = catalog.inbox_sources(tenant_id)
    for item in scan_tenant_inbox(root, tenant_id):
        scanned += 1
        origin = f"inbox:{item.relative}"
        seen.add(origin)
        if item.size > max_file_bytes:
            report.refused.append(
                f"{item.relative}: {item.size} bytes is over the {max_file_bytes} limit"
            )
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
        # A `.subjects` edit changes who may read the files below it even when
        # their bytes did not change: the catalog and both indexes move together.
        before = known.get(origin)
        if before is not None and tuple(sorted(before[1])) != tuple(sorted(item.subjects)):
            change_subjects(catalog, indexes, tenant_id, registration.source_id, item.subjects)
            report.rescoped += 1
    if scanned < MAX_FILES_PER_SCAN:
        for origin, (source_id, _) in known.items():
            if origin not in seen:
                request_deletion(catalog, indexes, tenant_id, source_id)
                report.removed += 1
    return report
