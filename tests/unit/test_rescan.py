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
