-- The compiled overview page: per tenant, the ~500-token page a model loads
-- first (groundwork/overview.py). `overview_pages` records how it was compiled
-- (the digest of its inputs: each published source version and when its
-- summary was compiled; the tokenizer that bounded it; stale when the drift
-- check marked it); `overview_statements` holds its lines, each naming the
-- source version it cites. The statements are document text (titles,
-- summaries, headings): they go with their source (ON DELETE CASCADE), so
-- erasing a source erases its line, and reads filter them by the source's
-- state and subjects like any chunk.
-- depends: 0033_chunk_document_type
CREATE TABLE overview_pages (
    tenant_id     text PRIMARY KEY REFERENCES tenants ON DELETE CASCADE,
    inputs_digest text NOT NULL,
    source_count  integer NOT NULL CHECK (source_count >= 0),
    tokens        integer NOT NULL CHECK (tokens >= 0),
    tokenizer     text NOT NULL DEFAULT '',
    compiled_at   timestamptz NOT NULL DEFAULT now(),
    stale_since   timestamptz,
    stale_reason  text
);

CREATE TABLE overview_statements (
    tenant_id  text NOT NULL REFERENCES overview_pages ON DELETE CASCADE,
    position   integer NOT NULL CHECK (position >= 0),
    source_id  text NOT NULL REFERENCES sources ON DELETE CASCADE,
    version_id text NOT NULL REFERENCES source_versions ON DELETE CASCADE,
    title      text NOT NULL,
    body       text NOT NULL,
    pointers   text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (tenant_id, position)
);
CREATE INDEX overview_statements_source ON overview_statements (source_id);

DO $$
BEGIN
    PERFORM groundwork_wall('overview_pages');
    PERFORM groundwork_wall('overview_statements');
END
$$;
