"""When the hourly rescan asks for a tenant's run (groundwork.connectors.rescan):
only for something no sensor asked for, or a backlog."""

from __future__ import annotations

from groundwork.connectors.rescan import rescans_wanted


def test_an_unchanged_tenant_gets_no_run_and_each_reason_gets_one() -> None:
    tenants = ["calm", "never", "changed", "quota", "due", "waiting"]
    fingerprints = {t: "f" for t in tenants} | {"changed": "g"}
    scans = {t: ("f", False) for t in tenants if t != "never"} | {"quota": ("f", True)}
    wanted = rescans_wanted(tenants, fingerprints, scans, {"due"}, {"waiting"})
    assert wanted == ["never", "changed", "quota", "due", "waiting"]
    assert rescans_wanted(["calm"], fingerprints, scans, set(), set()) == []


def test_a_tenant_without_a_folder_gets_a_run_for_its_backlog_only() -> None:
    """A tenant fed through the API alone has no folder to walk: nothing but
    its backlog asks for its run, in the partitions' order like the others."""
    partitions = ["api-idle", "api-waiting", "calm"]
    fingerprints = {"calm": "f"}
    scans = {"calm": ("f", False)}
    wanted = rescans_wanted(partitions, fingerprints, scans, set(), {"api-waiting"})
    assert wanted == ["api-waiting"]
    assert rescans_wanted(partitions, fingerprints, scans, set(), set()) == []
