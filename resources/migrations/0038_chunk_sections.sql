-- Parent-child chunks: a version's sections are rows (chunk_sections, the
-- parents) and each raw chunk names its section (chunks.parent_id, the
-- children); section drill-down walks that relation instead of matching
-- heading paths. A section is the raw chunks of a version sharing a heading
-- path (the grouping drill-down used before, now stored), its id derived from
-- the version and the path (groundwork_section_id), so a rerun writes the same
-- ids. The summary layer's chunks have no parent (NULL).
-- No foreign key from chunks to chunk_sections: both are written in one
-- transaction (replace_chunks), children first, and the sections are rebuilt
-- from the children (groundwork_link_sections).
-- depends: 0037_overview_pages
CREATE FUNCTION groundwork_section_id(version_id text, heading_path text[])
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 'sec_' || md5(version_id || ':' || heading_path::text);

CREATE TABLE chunk_sections (
    section_id     text PRIMARY KEY,
    tenant_id      text NOT NULL REFERENCES tenants ON DELETE CASCADE,
    source_id      text NOT NULL REFERENCES sources ON DELETE CASCADE,
    version_id     text NOT NULL REFERENCES source_versions ON DELETE CASCADE,
    position       integer NOT NULL CHECK (position >= 0),  -- section order in the version
    heading_path   text[] NOT NULL,
    first_position integer NOT NULL,  -- its first child's position
    chunk_count    integer NOT NULL CHECK (chunk_count > 0),
    UNIQUE (version_id, position)
);
CREATE INDEX chunk_sections_source ON chunk_sections (source_id);

ALTER TABLE chunks ADD COLUMN parent_id text;

-- A version's sections rebuilt from its raw chunks, each chunk linked to its
-- section first (rows written before this migration, or by a writer that did
-- not name a parent).
CREATE FUNCTION groundwork_link_sections(v text) RETURNS void LANGUAGE sql AS $$
    UPDATE chunks SET parent_id = groundwork_section_id(version_id, heading_path)
     WHERE version_id = v AND layer = 'raw' AND parent_id IS NULL;
    DELETE FROM chunk_sections WHERE version_id = v;
    INSERT INTO chunk_sections (section_id, tenant_id, source_id, version_id, position,
                                heading_path, first_position, chunk_count)
    SELECT parent_id, tenant_id, source_id, version_id,
           (row_number() OVER (ORDER BY first, parent_id) - 1)::integer, heading_path, first, n
      FROM (SELECT DISTINCT ON (parent_id) parent_id, tenant_id, source_id, version_id,
                   heading_path,  -- its first child's
                   min(position) OVER (PARTITION BY parent_id) AS first,
                   count(*) OVER (PARTITION BY parent_id)::integer AS n
              FROM chunks WHERE version_id = v AND layer = 'raw'
             ORDER BY parent_id, position) section;
$$;

-- existing rows: every chunked version linked once
SELECT groundwork_link_sections(version_id)
  FROM (SELECT DISTINCT version_id FROM chunks WHERE layer = 'raw') chunked;

DO $$
BEGIN
    PERFORM groundwork_wall('chunk_sections');
END
$$;
