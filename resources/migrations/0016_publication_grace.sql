-- The version a pointer moved away from, and when: a search whose legs read
-- the indexes just before a switch re-checks just after it; for a short grace
-- window it may still be answered from the previous version (never a mix:
-- one version per source per answer), so it never comes back empty.
-- depends: 0013_published_versions
ALTER TABLE published_versions ADD COLUMN previous_version_id text;
