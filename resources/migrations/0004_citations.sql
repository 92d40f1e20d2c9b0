-- Issued citations (snapshots that survive their source) and the ledger of
-- chunk ids handed to each API key (drill-down accepts only ids it was given).
-- depends: 0001_core
CREATE TABLE citations (
    citation_id  text PRIMARY KEY,
    tenant_id    text NOT NULL REFERENCES tenants ON DELETE CASCADE,
    key_id       text NOT NULL,
    chunk_id     text NOT NULL,
    source_id    text NOT NULL,
    version_id   text NOT NULL,
    content_hash text NOT NULL,
    subjects     text[] NOT NULL,  -- the source's scope when the citation was issued
    snapshot     jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX citations_tenant ON citations (tenant_id, created_at);

CREATE TABLE issued_chunks (
    key_id    text NOT NULL,
    chunk_id  text NOT NULL,
    issued_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (key_id, chunk_id)
);
CREATE INDEX issued_chunks_recent ON issued_chunks (key_id, issued_at DESC);
