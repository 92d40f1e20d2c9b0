-- The summary layer: per source version, a compiled summary page whose chunks
-- live in the same chunk table and indexes as the raw chunks, told apart by
-- `layer`. Being rows of the same version, they are published by the same
-- pointer flip, re-scoped, filtered by subjects and erased exactly as the raw
-- chunks are; the legs filter by layer so a raw search never sees them.
-- `version_summaries` records how each was compiled (kind, model), the raw
-- chunks it points at (the drill-down ids) and a digest of those raw chunks,
-- so a drift check can tell when the raw chunks changed since compilation.
-- It holds no text: the summary's text is its chunks'.
-- depends: 0018_live_tenant_index
ALTER TABLE chunks ADD COLUMN layer text NOT NULL DEFAULT 'raw'
    CHECK (layer IN ('raw', 'summary'));
ALTER TABLE chunks DROP CONSTRAINT chunks_version_position;
ALTER TABLE chunks ADD CONSTRAINT chunks_version_layer_position UNIQUE (version_id, layer, position);

ALTER TABLE embeddings_bge_small_en_v15_q ADD COLUMN layer text NOT NULL DEFAULT 'raw';
ALTER TABLE embeddings_minilm_l6_v2_int8 ADD COLUMN layer text NOT NULL DEFAULT 'raw';
ALTER TABLE keyword_chunks ADD COLUMN layer text NOT NULL DEFAULT 'raw';

-- the summary stage's progress: a version is ready for the indexes once its
-- summary is compiled (so both layers of a version are published together);
-- NULL again when the drift check marks the summary for recompilation
ALTER TABLE source_versions ADD COLUMN summarized_at timestamptz;
-- versions processed before the summary layer existed: compiled by the next
-- run of the summary stage, which sends them through the indexes again
-- (their raw chunks stay published meanwhile)

CREATE TABLE version_summaries (
    version_id   text PRIMARY KEY REFERENCES source_versions ON DELETE CASCADE,
    tenant_id    text NOT NULL REFERENCES tenants ON DELETE CASCADE,
    source_id    text NOT NULL REFERENCES sources ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('extractive', 'generative')),
    model        text NOT NULL DEFAULT '',
    pointers     text[] NOT NULL,
    raw_digest   text NOT NULL,
    compiled_at  timestamptz NOT NULL DEFAULT now(),
    stale_since  timestamptz,
    stale_reason text
);
CREATE INDEX version_summaries_tenant ON version_summaries (tenant_id, source_id);

DO $$
BEGIN
    PERFORM groundwork_wall('version_summaries');
END
$$;
