"""The schedules evaluated as the daemon evaluates them (they never were in a
test): the hourly rescan asks for the tenants that have an inbox folder, one
run each per tick; the nightly reconciliation asks for its run."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import dagster as dg

from pipelines.definitions import defs
from pipelines.sensors import inbox_rescan_schedule
from resources.composition.platform import Platform
from tests.e2e.helpers import write_inbox


def test_the_rescan_asks_for_each_tenant_with_an_inbox_once_per_tick(platform: Platform) -> None:
    with_inbox, api_only = (f"sch-{uuid.uuid4().hex[:8]}" for _ in range(2))
    write_inbox(platform.settings.inbox_dir, with_inbox, {"a.md": "# A\n"})
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("tenant", [with_inbox, api_only])
        ticks = [datetime(2026, 12, 1, hour, 17, tzinfo=UTC) for hour in (9, 10)]
        runs = [
            inbox_rescan_schedule(
                dg.build_schedule_context(instance=instance, scheduled_execution_time=tick)
            )
            for tick in ticks
        ]
    assert [[r.partition_key for r in tick] for tick in runs] == [[with_inbox], [with_inbox]]
    assert runs[0][0].run_key != runs[1][0].run_key  # each tick is its own run


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
