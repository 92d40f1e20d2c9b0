"""source_registrations: files in the tenant's inbox become sources and versions."""

import time

import dagster as dg

from assets.partitions import tenant_partitions
from assets.policies import INFRA_RETRY
from groundwork.inbox import MAX_FILE_BYTES, MAX_FILES_PER_SCAN, scan_tenant_inbox
from groundwork.lifecycle import request_deletion
from groundwork.pipeline import register_file
from resources.dagster_resources import GroundworkResource
from resources.sniffing import sniff_media_type


@dg.asset(
    partitions_def=tenant_partitions,
    group_name="ingest",
    kinds={"postgres", "filesystem"},
    retry_policy=INFRA_RETRY,
    description="Registers the tenant's inbox files: new files become sources, changed bytes "
    "a new immutable version; unchanged files are skipped.",
)
def source_registrations(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    tenant_id = context.partition_key
    platform.catalog.ensure_tenant(tenant_id, tenant_id, platform.settings.default_model_key)
    started = time.monotonic()
    created = unchanged = refused = 0
    seen: set[str] = set()
    scanned = 0
    for item in scan_tenant_inbox(platform.settings.inbox_dir, tenant_id):
        scanned += 1
        seen.add(f"inbox:{item.relative}")
        if item.size > MAX_FILE_BYTES:
            refused += 1
            context.log.warning(
                f"{item.relative}: {item.size} bytes is over the {MAX_FILE_BYTES} limit"
            )
            continue
        data = item.path.read_bytes()
        registration = register_file(
            platform.catalog,
            platform.blobs,
            tenant_id=tenant_id,
            origin=f"inbox:{item.relative}",
            filename=item.relative,
            data=data,
            subjects=item.subjects,
            media_type=sniff_media_type(data, item.relative),
        )
        if registration.created:
            created += 1
        else:
            unchanged += 1
    # The folder connector mirrors removals: a file gone from the inbox is
    # deleted through the deletion path (unless the scan hit its bound and so
    # cannot tell a missing file from an unscanned one).
    removed = 0
    if scanned < MAX_FILES_PER_SCAN:
        indexes = platform.indexes()
        for origin, source_id in platform.catalog.inbox_origins(tenant_id).items():
            if origin not in seen:
                request_deletion(platform.catalog, indexes, tenant_id, source_id)
                removed += 1
    counts = platform.catalog.counts(tenant_id)
    return dg.MaterializeResult(
        metadata={
            "removed": removed,
            "new_versions": created,
            "unchanged": unchanged,
            "refused_oversize": refused,
            "sources": counts.sources,
            "versions": counts.versions,
            "seconds": round(time.monotonic() - started, 3),
        }
    )
