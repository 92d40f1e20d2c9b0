-- The inbox is its tenant's `inbox` connector instance (groundwork/services/
-- inbox_sync.py): what a rescan trusts without reading a file is the item's
-- listed version in connector_items, and the daily verification is the
-- item's age there. The stat signatures kept on sources (0027) go.
-- depends: 0043_inbox_scans
ALTER TABLE sources DROP COLUMN IF EXISTS inbox_stat;
ALTER TABLE sources DROP COLUMN IF EXISTS inbox_stat_version;
ALTER TABLE sources DROP COLUMN IF EXISTS inbox_verified_at;
