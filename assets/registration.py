"""source_registrations: files in the tenant's inbox become sources and versions."""

import time

import dagster as dg

from assets.partitions import tenant_partitions
from assets.policies import INFRA_RETRY
from groundwork.connectors.folder_sync import sync_inbox
from groundwork.ports import SYSTEM_TENANT
from groundwork.services.limits import inbox_quota
from resources.dagster_glue.platform_resource import GroundworkResource
from resources.inspection.sniffing import sniff_media_type


@dg.asset(
    partitions_def=tenant_partitions,
    group_name="registration",
    kinds={"postgres", "filesystem"},
    retry_policy=INFRA_RETRY,
    description="Registers the tenant's inbox files: new files become sources, changed bytes "
    "a new immutable version; unchanged files are skipped, unread when their size, mtime and "
    "inode match their last read (every file is read again once a day).",
)
def source_registrations(
    context: dg.AssetExecutionContext, groundwork: GroundworkResource
) -> dg.MaterializeResult:
    platform = groundwork.platform()
    tenant_id = context.partition_key
    if (
        platform.catalog.get_tenant(tenant_id) is None
        and not (platform.settings.inbox_dir / tenant_id).is_dir()
    ):
        # An erased tenant (or a stale partition) is never brought back by a
        # rescan: only an inbox folder or the API creates a tenant.
        return dg.MaterializeResult(metadata={"skipped": "no such tenant and no inbox folder"})
    if tenant_id == SYSTEM_TENANT and platform.catalog.get_tenant(tenant_id) is None:
        # every tenant reads its documents: a folder never creates the system
        # corpus (groundwork tenant create-system does); once made, its inbox
        # folder feeds it like any tenant's
        return dg.MaterializeResult(metadata={"skipped": "the system corpus is not created yet"})
    platform.catalog.ensure_tenant(tenant_id, tenant_id, platform.settings.default_model_key)
    started = time.monotonic()
    report = sync_inbox(
        platform.catalog,
        platform.blobs,
        platform.indexes(),
        platform.settings.inbox_dir,
        tenant_id,
        sniff_media_type,
        scanner=platform.scanner(),
        quota=inbox_quota(platform.catalog, tenant_id),
    )
    for refusal in report.refused:
        context.log.warning(refusal)
    for finding in report.quarantined:
        context.log.error(f"quarantined (malware scan): {finding}")
    counts = platform.catalog.counts(tenant_id)
    return dg.MaterializeResult(
        metadata={
            "removed": report.removed,
            "rescoped": report.rescoped,
            "new_versions": report.created,
            "unchanged": report.unchanged,
            # of the unchanged, recognised by their stat signature without a read
            "unread": report.unread,
            "refused_oversize": len(report.refused) - report.over_quota,
            # refused by the tenant's quota (the limit named in `refusals`); left in the inbox
            "refused_quota": report.over_quota,
            "refusals": dg.MetadataValue.text("\n".join(report.refused[:20])),
            "quarantined": len(report.quarantined),
            # the folder as this step walked it, computed as the inbox sensor
            # computes it (its cursor) and recorded for the hourly rescan
            "folder_fingerprint": report.fingerprint,
            "sources": counts.sources,
            "versions": counts.versions,
            "seconds": round(time.monotonic() - started, 3),
        }
    )


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[source_registrations])
