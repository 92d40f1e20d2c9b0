-- Atomic publication. Chunk rows (and so vector rows and keyword documents)
-- are keyed by version: a new version's chunks are new rows beside the
-- published version's, never an overwrite of them. Which version of a source
-- each model serves is one pointer row, flipped in one transaction; every read
-- of chunk text joins it, so a search sees exactly the published version.
-- depends: 0012_key_scopes
ALTER TABLE chunks DROP CONSTRAINT chunks_source_id_position_key;
ALTER TABLE chunks ADD CONSTRAINT chunks_version_position UNIQUE (version_id, position);
CREATE INDEX chunks_version ON chunks (version_id);

CREATE TABLE published_versions (
    tenant_id    text NOT NULL REFERENCES tenants ON DELETE CASCADE,
    source_id    text NOT NULL REFERENCES sources ON DELETE CASCADE,
    model_key    text NOT NULL,
    version_id   text NOT NULL REFERENCES source_versions ON DELETE CASCADE,
    published_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_id, model_key)
);
CREATE INDEX published_versions_version ON published_versions (version_id, model_key);

-- what earlier versions published: the newest published version per source and model
INSERT INTO published_versions (tenant_id, source_id, model_key, version_id, published_at)
SELECT DISTINCT ON (v.source_id, m.model_key) v.tenant_id, v.source_id, m.model_key,
       v.version_id, m.published_at
FROM version_models m JOIN source_versions v USING (version_id)
WHERE m.published_at IS NOT NULL
ORDER BY v.source_id, m.model_key, v.version_no DESC;

DO $$
BEGIN
    PERFORM groundwork_wall('published_versions');
END
$$;
