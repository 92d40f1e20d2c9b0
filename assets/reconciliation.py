"""reconciliation: the catalog against the blob store, both directions; reports, never deletes."""

import dagster as dg

from assets.policies import INFRA_RETRY
from groundwork.reconciliation import reconcile
from resources.dagster_glue.platform_resource import GroundworkResource

STORED_HAVE_BYTES = "stored_versions_have_bytes"


@dg.asset(
    group_name="reconciliation",
    kinds={"postgres", "filesystem"},
    retry_policy=INFRA_RETRY,
    check_specs=[
        dg.AssetCheckSpec(
            STORED_HAVE_BYTES,
            asset="reconciliation",
            description="Every stored version's bytes exist.",
        )
    ],
    description="Rows without bytes and bytes without rows, both directions. Reports only: a slow "
    "write is not an orphan.",
)
def reconciliation(groundwork: GroundworkResource) -> dg.MaterializeResult:
    platform = groundwork.platform()
    report = reconcile(platform.catalog, platform.blobs, platform.upload_staging())
    kinds = (
        "pending-without-bytes",
        "pending-with-bytes",
        "stored-without-bytes",
        "bytes-without-row",
        "incomplete-write",
        "staged-upload",
    )
    return dg.MaterializeResult(
        metadata={kind: report.count(kind) for kind in kinds}
        | {
            "findings": dg.MetadataValue.json(
                [
                    {"kind": f.kind, "version_id": f.version_id, "age_seconds": f.age_seconds}
                    for f in report.findings[:50]
                ]
            )
        },
        check_results=[
            dg.AssetCheckResult(
                check_name=STORED_HAVE_BYTES,
                passed=report.integrity_ok,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={"stored_without_bytes": report.count("stored-without-bytes")},
            )
        ],
    )


#: what this stage's module defines; `pipelines.definitions` merges every module's
defs = dg.Definitions(assets=[reconciliation])
