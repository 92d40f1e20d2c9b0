"""source_registrations: the tenant's inbox folder, passed as its connector
(groundwork.services.inbox_sync), becomes sources and versions."""

import time

import dagster as dg

from assets.partitions import tenant_partitions
from assets.policies import INFRA_RETRY
from groundwork.ports import SYSTEM_TENANT
from groundwork.services.inbox_sync import sync_inbox
from resources.connectors.inbox_folder import inbox_connector
from resources.connectors.ports import ConnectorPlatform
from resources.dagster_glue.platform_resource import GroundworkResource


@dg.asset(
    partitions_def=tenant_partitions,
    group_name="registration",
    kinds={"postgres", "filesystem"},
    retry_policy=INFRA_RETRY,
    description="A pass of the tenant's inbox connector (the fsspec connector on its inbox "
    "folder): new files become sources, changed bytes a new immutable version, a file gone "
    "is deleted and a moved one keeps its source; unchanged files are not read while their "
    "size, mtime and inode match (every file is read again once a day).",
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
    inbox = platform.settings.inbox_dir
    report = sync_inbox(
        platform,
        ConnectorPlatform(platform).connector_catalog(),
        lambda _: inbox_connector(inbox, tenant_id),
        inbox,
        tenant_id,
    )
    if report.skipped:
        context.log.info(f"no inbox pass: {report.skipped}")
    for refusal in report.refused:
        context.log.warning(refusal)
    for finding in report.quarantined:
        context.log.error(f"quarantined (malware scan): {finding}")
    for error in report.errors:
        # the folder's problem is its own: uploads and the other stages go on
        context.log.error(f"inbox pass: {error}")
    counts = platform.catalog.counts(tenant_id)
    return dg.MaterializeResult(
        metadata={
            "removed": report.removed,
            "moved": report.moved,
            # of the unchanged, read again by the daily verification
            "verified": report.verified,
            "errors": dg.MetadataValue.text("\n".join(report.errors[:20])),
            "rescoped": report.rescoped,
            "new_versions": report.created,
            "unchanged": report.unchanged,
            # recognised by their listed version (size, mtime, inode) without a read
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
