"""The schedules evaluated as the daemon evaluates them (they never were in a
test): the hourly rescan asks for a tenant's run only when there is something
no sensor asked for (a folder that differs from what the last registration
walked, a read due) and none for an unchanged tenant, where it used to ask
for every inbox tenant every hour; the nightly reconciliation asks for its run."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import dagster as dg

from pipelines.definitions import defs
from pipelines.sensors import inbox_rescan_schedule
from resources.composition.platform import Platform
from tests.e2e.helpers import ingest_run, resource, write_inbox


def _rescan(instance: dg.DagsterInstance, index_prefix: str, hour: int) -> list[str]:
    """The tenants one tick of the schedule asks runs for."""
    with dg.build_schedule_context(
        instance=instance,
        scheduled_execution_time=datetime(2026, 12, 1, hour, 17, tzinfo=UTC),
        resources={"groundwork": resource(index_prefix)},
    ) as context:
        result = inbox_rescan_schedule(context)
    if isinstance(result, dg.SkipReason):
        return []
    requests = cast(list[dg.RunRequest], result)
    assert len({r.run_key for r in requests}) == len(requests)
    return [str(r.partition_key) for r in requests]


def _aged(folder: Path, seconds: float = 60) -> None:
    """Files written a while ago (a read right after a write is read again: the racy rule)."""
    for path in folder.rglob("*"):
        if path.is_file():
            mtime = path.stat().st_mtime_ns - int(seconds * 1e9)
            os.utime(path, ns=(mtime, mtime))


def test_the_rescan_asks_only_for_a_tenant_with_something_no_sensor_asked_for(
    platform: Platform, index_prefix: str
) -> None:
    tenant, api_only = (f"sch-{uuid.uuid4().hex[:8]}" for _ in range(2))
    inbox = platform.settings.inbox_dir
    write_inbox(inbox, tenant, {"a.md": "# A\n\nalpha river\n"})
    _aged(inbox / tenant)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("tenant", [tenant, api_only])
        # never registered (its run failed, say): asked for, each tick a run of its own
        assert _rescan(instance, index_prefix, 9) == [tenant]
        ingest_run(instance, index_prefix, tenant)
        # unchanged since: no run (it was one every hour, each finding nothing)
        assert _rescan(instance, index_prefix, 10) == []
        assert _rescan(instance, index_prefix, 11) == []
        # a file that no sensor turned into a run
        write_inbox(inbox, tenant, {"b.md": "# B\n\nbeta stone\n"})
        _aged(inbox / tenant)
        assert _rescan(instance, index_prefix, 12) == [tenant]
        ingest_run(instance, index_prefix, tenant)
        assert _rescan(instance, index_prefix, 13) == []
        # the daily verification read is due
        with platform.pool.connection() as conn:
            conn.execute(
                "UPDATE connector_items SET updated_at = updated_at - interval '25 hours' "
                "WHERE tenant_id = %s",
                (tenant,),
            )
        assert _rescan(instance, index_prefix, 14) == [tenant]
        ingest_run(instance, index_prefix, tenant)
        assert _rescan(instance, index_prefix, 15) == []


def test_a_tenant_with_a_backlog_gets_its_run_each_hour(
    platform: Platform, index_prefix: str
) -> None:
    """Its run retries the stage that keeps it and evaluates its freshness
    check (which turns red within the hour), folder or not."""
    from groundwork.stages.registration import register_file

    tenant = f"sch-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant,
        origin="api:n.md",
        filename="n.md",
        data=b"# N\n\nwaiting\n",
        subjects=[f"tenant:{tenant}"],
        media_type="text/markdown",
    )
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("tenant", [tenant])
        assert _rescan(instance, index_prefix, 9) == [tenant]
        assert _rescan(instance, index_prefix, 10) == [tenant]


def test_the_nightly_reconciliation_requests_its_run() -> None:
    schedule = defs().get_repository_def().get_schedule_def("nightly_reconciliation")
    with dg.instance_for_test() as instance:
        result = schedule.evaluate_tick(
            dg.build_schedule_context(
                instance=instance, scheduled_execution_time=datetime(2026, 12, 2, 2, 41, tzinfo=UTC)
            )
        )
    assert [r.job_name or schedule.job_name for r in result.run_requests or []] == [
        "reconcile_storage"
    ]
