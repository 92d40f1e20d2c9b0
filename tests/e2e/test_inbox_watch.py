"""Inbox changes ask for their tenant's ingest run as they happen (the sensor
daemon's 5 s loop was half of inbox -> searchable); a burst becomes one
request; hidden files do not count but `.subjects` does; and the inbox
sensor adopts the state a watcher's run was requested for instead of asking
for the same work again."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import dagster as dg
import pytest

from groundwork.connectors.inbox import FINGERPRINT_LABEL
from groundwork.ports import IngestRequested, IngestTriggerOutcome
from groundwork_cli.inbox_watch import InboxWatcher, tenant_of
from pipelines.sensors import inbox_sensor
from resources.composition.platform import Platform
from resources.connectors.inbox_folder import inbox_fingerprint
from tests.e2e.helpers import resource, write_inbox


class RecordingTrigger:
    """The IngestTrigger port's contract, recording what it was asked."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.arrived = threading.Event()

    def request_ingest(
        self, tenant_id: str, labels: Mapping[str, str] | None = None
    ) -> IngestTriggerOutcome:
        self.requests.append((tenant_id, dict(labels or {})))
        self.arrived.set()
        return IngestRequested(f"run-{len(self.requests)}")


def _settle(trigger: RecordingTrigger, seconds: float = 1.5) -> None:
    assert trigger.arrived.wait(10), "no request arrived"
    time.sleep(seconds)  # anything else would have arrived by now


def test_paths_map_to_tenants(tmp_path: Path) -> None:
    assert tenant_of(tmp_path, str(tmp_path / "acme" / "a.pdf")) == "acme"
    assert tenant_of(tmp_path, str(tmp_path / "acme" / "sub" / ".subjects")) == "acme"
    assert tenant_of(tmp_path, str(tmp_path / "acme" / ".a.pdf.part")) is None
    assert tenant_of(tmp_path, str(tmp_path / "acme" / ".cache" / "x")) is None
    assert tenant_of(tmp_path, str(tmp_path / "acme")) is None
    assert tenant_of(tmp_path, str(tmp_path / "Not A Tenant" / "x")) is None
    assert tenant_of(tmp_path, "/elsewhere/acme/x") is None


def test_a_running_watcher_says_so_in_the_home_for_its_inbox_only(tmp_path: Path) -> None:
    from groundwork.connectors.inbox import watched

    inbox, home = tmp_path / "inbox", tmp_path / "home"
    home.mkdir()
    watcher = InboxWatcher(inbox, RecordingTrigger(), home=home)
    assert not watched(home, inbox)
    watcher.start()
    try:
        assert watched(home, inbox)
        assert not watched(home, tmp_path / "another-inbox")
    finally:
        watcher.stop()
    assert not watched(home, inbox)


def test_a_burst_of_writes_is_one_request_with_the_state_it_saw(tmp_path: Path) -> None:
    trigger = RecordingTrigger()
    watcher = InboxWatcher(tmp_path, trigger)
    watcher.start()
    try:
        for n in range(5):
            write_inbox(tmp_path, "acme", {f"doc-{n}.md": f"# Doc {n}\n"})
        _settle(trigger)
        assert trigger.requests == [
            (
                "acme",
                {
                    "groundwork/trigger": "inbox",
                    FINGERPRINT_LABEL: inbox_fingerprint(tmp_path, "acme"),
                },
            )
        ]
        trigger.arrived.clear()
        (tmp_path / "acme" / ".hidden.part").write_text("partial")
        time.sleep(1.5)
        assert len(trigger.requests) == 1  # a hidden file is not a change
        (tmp_path / "acme" / ".subjects").write_text("group:finance\n")
        _settle(trigger)
        assert len(trigger.requests) == 2  # a re-scope is
    finally:
        watcher.stop()


def test_the_sensor_adopts_the_state_a_watcher_run_was_requested_for(
    platform: Platform, index_prefix: str
) -> None:
    tenant = f"w-{uuid.uuid4().hex[:8]}"
    inbox = platform.settings.inbox_dir
    write_inbox(inbox, tenant, {"a.md": "# A\n\ntext\n"})
    groundwork = resource(index_prefix)
    with dg.instance_for_test() as instance:
        first = inbox_sensor(
            dg.build_sensor_context(instance=instance, resources={"groundwork": groundwork})
        )
        write_inbox(inbox, tenant, {"b.md": "# B\n\nmore\n"})
        instance.add_run(  # what the watcher's request left behind
            dg.DagsterRun(
                job_name="tenant_ingest",
                run_id=uuid.uuid4().hex,
                status=dg.DagsterRunStatus.SUCCESS,
                tags={
                    "dagster/partition": tenant,
                    FINGERPRINT_LABEL: inbox_fingerprint(inbox, tenant),
                },
            )
        )
        second = inbox_sensor(
            dg.build_sensor_context(
                instance=instance, cursor=first.cursor, resources={"groundwork": groundwork}
            )
        )
        assert tenant not in {r.partition_key for r in second.run_requests or []}
        write_inbox(inbox, tenant, {"c.md": "# C\n\nunseen by any run\n"})
        third = inbox_sensor(
            dg.build_sensor_context(
                instance=instance, cursor=second.cursor, resources={"groundwork": groundwork}
            )
        )
        assert tenant in {r.partition_key for r in third.run_requests or []}


def test_the_sensor_adopts_what_the_cli_ingested(platform: Platform, index_prefix: str) -> None:
    """The demo ingests the sample inbox through the CLI before the daemon
    starts; the inbox sensor's first tick must not ask for that work again
    (it did: six failed partitions when --exit stopped the launcher under them)."""
    from groundwork_cli.ingest import ingest_tenants
    from pipelines.definitions import build_definitions

    tenant = f"cli-{uuid.uuid4().hex[:8]}"
    inbox = platform.settings.inbox_dir
    write_inbox(inbox, tenant, {"a.md": "# A\n\ningested by the CLI\n"})
    groundwork = resource(index_prefix)
    with dg.instance_for_test() as instance:
        ingest_tenants(
            instance,
            [tenant],
            platform.settings.default_model_key,
            inbox_dir=inbox,
            definitions=build_definitions(groundwork),
        )
        first = inbox_sensor(
            dg.build_sensor_context(instance=instance, resources={"groundwork": groundwork})
        )
        assert tenant not in {r.partition_key for r in first.run_requests or []}
        write_inbox(inbox, tenant, {"b.md": "# B\n\narrived after the CLI's run\n"})
        second = inbox_sensor(
            dg.build_sensor_context(
                instance=instance, cursor=first.cursor, resources={"groundwork": groundwork}
            )
        )
        assert tenant in {r.partition_key for r in second.run_requests or []}


def test_with_a_watcher_running_the_sensor_scans_the_inbox_only_as_a_slow_fallback(
    platform: Platform, index_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sensor daemon evaluates the inbox sensor on every pass (~5 s), and
    each evaluation walks every tenant's folder: with the SciFact tenant's
    5,183 files that is the idle stack's largest recurring cost. While the
    supervisor's watcher runs (it requests a run as files arrive) the walk is
    a fallback for a missed event, once a minute; a dead watcher's marker
    counts for nothing."""
    from groundwork.connectors.inbox import INBOX_FALLBACK_SECONDS, mark_watched, unmark_watched
    from pipelines import sensors

    tenant = f"f-{uuid.uuid4().hex[:8]}"
    inbox = platform.settings.inbox_dir
    home = platform.settings.home
    groundwork = resource(index_prefix)

    def tick(at: float, cursor: str | None) -> tuple[set[str], str | None]:
        monkeypatch.setattr(sensors, "_now", lambda: at)
        result = inbox_sensor(
            dg.build_sensor_context(
                instance=instance, cursor=cursor, resources={"groundwork": groundwork}
            )
        )
        if isinstance(result, dg.SkipReason):
            return set(), cursor
        return {str(r.partition_key) for r in result.run_requests or []}, result.cursor

    write_inbox(inbox, tenant, {"a.md": "# A\n\ntext\n"})
    with dg.instance_for_test() as instance:
        mark_watched(home, inbox, os.getpid())
        try:
            t0 = 2_000_000.0
            requested, cursor = tick(t0, None)
            assert tenant in requested  # the first tick always scans
            write_inbox(inbox, tenant, {"b.md": "# B\n\nmissed by the watcher\n"})
            requested, cursor = tick(t0 + 5, cursor)
            assert tenant not in requested  # no walk between fallback scans
            requested, cursor = tick(t0 + INBOX_FALLBACK_SECONDS, cursor)
            assert tenant in requested  # the fallback finds what the watcher missed
        finally:
            unmark_watched(home)
        mark_watched(home, inbox, _dead_pid())
        try:
            write_inbox(inbox, tenant, {"c.md": "# C\n\nno watcher alive\n"})
            requested, cursor = tick(t0 + INBOX_FALLBACK_SECONDS + 5, cursor)
            assert tenant in requested  # a dead watcher: every pass scans
        finally:
            unmark_watched(home)


def _dead_pid() -> int:
    import subprocess

    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid
