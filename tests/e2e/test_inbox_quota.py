"""Per-tenant quotas apply to inbox files as they do to uploads (issue #33): a
file that would take the tenant past its documents or bytes is not
registered, the refusal names the limit (the registration step's warning and
metadata), the file stays in the inbox untouched, and once the limit is raised
the next rescan registers it. Real PostgreSQL catalog, real blob store."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from assets.registration import source_registrations
from groundwork.services.inbox_sync import SyncReport
from groundwork.tenancy import TenantLimits
from resources.composition.platform import Platform
from resources.connectors.inbox_folder import inbox_fingerprint
from tests.e2e.helpers import inbox_pass, write_inbox


def _sync(platform: Platform, tenant: str) -> SyncReport:
    return inbox_pass(platform, tenant)


def test_an_inbox_file_over_the_document_quota_stays_in_place_named(
    platform: Platform, tenant_id: str
) -> None:
    platform.catalog.set_tenant_limits(tenant_id, TenantLimits(max_documents=1))
    inbox = platform.settings.inbox_dir
    write_inbox(inbox, tenant_id, {"a.md": "# A\n\nfirst\n", "b.md": "# B\n\nsecond\n"})
    report = _sync(platform, tenant_id)
    assert report.created == 1
    assert len(report.refused) == 1 and report.refused[0].startswith("b.md: ")
    assert "max_documents = 1" in report.refused[0]
    assert (inbox / tenant_id / "b.md").read_text() == "# B\n\nsecond\n"  # nothing lost
    assert platform.catalog.counts(tenant_id).sources == 1
    # an edit of the registered file is a new version, not a new document: allowed
    (inbox / tenant_id / "a.md").write_text("# A\n\nfirst, edited\n")
    again = _sync(platform, tenant_id)
    assert again.created == 1 and len(again.refused) == 1
    platform.catalog.set_tenant_limits(tenant_id, TenantLimits(max_documents=2))
    raised = _sync(platform, tenant_id)
    assert raised.created == 1 and raised.refused == []
    assert platform.catalog.counts(tenant_id).sources == 2


def test_an_inbox_file_over_the_byte_quota_is_refused_naming_it(
    platform: Platform, tenant_id: str
) -> None:
    platform.catalog.set_tenant_limits(tenant_id, TenantLimits(max_bytes=100))
    write_inbox(platform.settings.inbox_dir, tenant_id, {"big.md": "# Big\n\n" + "x" * 200})
    report = _sync(platform, tenant_id)
    assert report.created == 0
    assert "max_bytes = 100" in report.refused[0]
    assert platform.catalog.counts(tenant_id).sources == 0


def test_the_registration_step_applies_the_quota(
    platform: Platform, tenant_id: str, index_prefix: str, tmp_path: Path
) -> None:
    from tests.e2e.helpers import resource

    platform.catalog.set_tenant_limits(tenant_id, TenantLimits(max_documents=0))
    write_inbox(platform.settings.inbox_dir, tenant_id, {"c.md": "# C\n\nthird\n"})
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        instance.add_dynamic_partitions("tenant", [tenant_id])
        result = dg.materialize(
            [source_registrations],
            partition_key=tenant_id,
            instance=instance,
            resources={"groundwork": resource(index_prefix)},
        )
    metadata = result.asset_materializations_for_node("source_registrations")[0].metadata
    assert metadata["refused_quota"].value == 1
    assert "max_documents = 0" in str(metadata["refusals"].value)
    assert platform.catalog.counts(tenant_id).sources == 0
    # what the step walked, as the inbox sensor computes it: an operator compares
    # it with the sensor's cursor to see which walk a run acted on
    walked = inbox_fingerprint(platform.settings.inbox_dir, tenant_id)
    assert walked and metadata["folder_fingerprint"].value == walked
