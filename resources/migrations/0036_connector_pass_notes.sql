-- Connectors (issue 34), what a pass keeps besides versions:
-- * connector_passes.notes: what a pass says about itself, shown in the
--   connector's state: e.g. that a Git branch's history was rewritten (the
--   last pass's commit gone or no longer an ancestor) and its whole tree was
--   listed instead of a diff. A resumed pass adds its notes to the record's.
-- * connector_items.links: the item ids an item links to (a crawled web
--   page's links, bounded in the core), so the next crawl follows a page that
--   answered 304 Not Modified without reading it; NULL for items of sources
--   that have no links.
-- depends: 0029_connectors 0032_version_location
ALTER TABLE connector_passes ADD COLUMN notes text[] NOT NULL DEFAULT '{}';
ALTER TABLE connector_items ADD COLUMN links text[];
