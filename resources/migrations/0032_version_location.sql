-- Where a connector found each version (issue 34): the Git commit and path,
-- the page URL, the bucket and key. Stored per version, not per source, so a
-- citation names the exact place its bytes came from even after the item
-- changed or moved; '{}' for uploads and inbox files. connector_items keeps
-- the last listed location too, so an item retried by id (a failed fetch, a
-- copy settled at the end of a pass) is registered with it.
-- Bounded in the core before it is written (groundwork/connectors/location.py).
-- depends: 0029_connectors 0030_artifact_roles
ALTER TABLE source_versions ADD COLUMN source_location jsonb NOT NULL DEFAULT '{}'::jsonb
    CHECK (jsonb_typeof(source_location) = 'object');
ALTER TABLE connector_items ADD COLUMN location jsonb NOT NULL DEFAULT '{}'::jsonb
    CHECK (jsonb_typeof(location) = 'object');
