-- Operable (issue 33): the hourly inbox rescan asks for a tenant's run only
-- when there is something to do. It used to start one tenant_ingest per inbox
-- tenant every hour, each finding nothing (100 runs an hour for 100 tenants).
-- A registration records what it walked: the folder's fingerprint (the inbox
-- sensor's) and whether it left files to try again (refused by a quota that
-- may allow them later). The rescan compares the folder with it; the daily
-- verification read is due from sources.inbox_verified_at (0027).
-- A tenant-scoped table: behind the wall like every other (0009).
-- depends: 0042_connector_gone_items
CREATE TABLE inbox_scans (
    tenant_id     text PRIMARY KEY REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    fingerprint   text NOT NULL,
    rescan_wanted boolean NOT NULL,
    scanned_at    timestamptz NOT NULL DEFAULT now()
);

DO $$
BEGIN
    PERFORM groundwork_wall('inbox_scans');
END
$$;
