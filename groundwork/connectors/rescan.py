"""When the hourly inbox rescan asks for a tenant's run.

It used to ask for every inbox tenant every hour: 100 tenants were 100
`tenant_ingest` runs an hour, each finding nothing, since the inbox sensor
(and the supervisor's watcher) had already turned every change into a run
and the registration skips unchanged files by their stat signature. What a
run on a timer still adds is the run that nothing else requests:

- the folder differs from what the tenant's last registration walked (a run
  the sensor requested failed or never started, or the fingerprint was
  never recorded);
- the last registration left files to try again (refused by the tenant's
  quota, which may allow them now);
- a file's read is due: its signature was never recorded (read moments after
  it was written, the racy rule) or is older than the verification interval
  (the daily read that finds an edit keeping size and mtime);
- the tenant has a backlog: its run retries the stage that keeps it and
  evaluates the freshness check, which turns red within the hour. This is
  the only reason for a tenant without an inbox folder (fed through the API).

Pure: the schedule supplies the folders' fingerprints and the catalog's
answers.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence


def rescans_wanted(
    tenants: Sequence[str],
    fingerprints: Mapping[str, str],
    scans: Mapping[str, tuple[str, bool]],
    reads_due: Collection[str],
    backlog: Collection[str],
) -> list[str]:
    """The tenants (in the given order) whose run is worth starting. A tenant
    with an inbox folder is one in `fingerprints` (its walk now), compared with
    the last scan's (fingerprint, rescan wanted) and its reads due; any tenant
    with a backlog is wanted."""
    wanted = []
    for tenant in tenants:
        if tenant in backlog:
            wanted.append(tenant)
            continue
        if tenant not in fingerprints:
            continue  # no folder: only a backlog asks for its run
        last = scans.get(tenant)
        if last is None or last[1] or fingerprints[tenant] != last[0] or tenant in reads_due:
            wanted.append(tenant)
    return wanted
