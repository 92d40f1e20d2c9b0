-- The PostgreSQL full-text KeywordIndex adapter (for installs without Java,
-- and a second adapter for the KeywordIndex conformance suite).
-- depends: 0001_core
CREATE TABLE keyword_chunks (
    chunk_id     text PRIMARY KEY,
    tenant_id    text NOT NULL,
    source_id    text NOT NULL,
    version_id   text NOT NULL,
    subjects     text[] NOT NULL,
    media_type   text NOT NULL,
    title        text NOT NULL,
    content      text NOT NULL,
    content_hash text NOT NULL,
    live         boolean NOT NULL DEFAULT false,
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED
);
CREATE INDEX keyword_chunks_tsv ON keyword_chunks USING gin (tsv);
CREATE INDEX keyword_chunks_source ON keyword_chunks (tenant_id, source_id);
