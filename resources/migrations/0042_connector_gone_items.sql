-- Connectors (issue 34): deletions known page by page. A sorted listing (S3's
-- keys in UTF-8 binary order, a sorted folder listing) names the id range
-- each page covers, so a known item in that range that the page lacks is gone
-- at that page, not after the whole listing:
-- * connector_items.state 'gone': the item's source was made unsearchable at
--   its page (its index rows not live) and is kept, with its bytes' sha256,
--   until the pass ends: a new id later in the same pass with the same bytes
--   (a move to a later key) takes the source over and shows it again, so
--   nothing is extracted or embedded again; the rest go through the deletion
--   path when the pass ends.
-- * the range is compared in byte order (COLLATE "C", whatever the database's
--   collation), through an index in that order.
-- depends: 0036_connector_pass_notes
ALTER TABLE connector_items DROP CONSTRAINT connector_items_state_check;
ALTER TABLE connector_items ADD CONSTRAINT connector_items_state_check
    CHECK (state IN ('ok', 'refused', 'failed', 'alias', 'gone'));
CREATE INDEX connector_items_id_bytes ON connector_items (instance_id, item_id COLLATE "C");
