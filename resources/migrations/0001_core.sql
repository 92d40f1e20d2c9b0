-- Core catalog: tenants, API keys, sources, immutable versions, extractions, chunks.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE tenants (
    tenant_id    text PRIMARY KEY CHECK (tenant_id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    display_name text NOT NULL,
    active_model text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    key_id     text PRIMARY KEY,
    tenant_id  text NOT NULL REFERENCES tenants ON DELETE CASCADE,
    key_hash   text NOT NULL UNIQUE,
    subjects   text[] NOT NULL,
    label      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);

CREATE TABLE sources (
    source_id          text PRIMARY KEY,
    tenant_id          text NOT NULL REFERENCES tenants ON DELETE CASCADE,
    origin             text NOT NULL,
    filename           text NOT NULL,
    subjects           text[] NOT NULL,
    state              text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'deleting', 'deleted')),
    current_version_id text,
    generation         bigint NOT NULL DEFAULT 1,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, origin)
);

CREATE TABLE source_versions (
    version_id         text PRIMARY KEY,
    tenant_id          text NOT NULL REFERENCES tenants ON DELETE CASCADE,
    source_id          text NOT NULL REFERENCES sources ON DELETE CASCADE,
    version_no         integer NOT NULL,
    sha256             text NOT NULL,
    size_bytes         bigint NOT NULL,
    media_type         text NOT NULL,
    blob_key           text NOT NULL,
    state              text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'stored', 'deleting', 'deleted')),
    processing_state   text NOT NULL DEFAULT 'pending'
                       CHECK (processing_state IN ('pending', 'extracting', 'extracted', 'failed')),
    failure_reason     text,
    failure_detail     text,
    title              text,
    low_confidence     boolean NOT NULL DEFAULT false,
    warnings           text[] NOT NULL DEFAULT '{}',
    created_at         timestamptz NOT NULL DEFAULT now(),
    extracted_at       timestamptz,
    chunked_at         timestamptz,
    keyword_indexed_at timestamptz,
    UNIQUE (source_id, version_no),
    CHECK ((processing_state = 'failed') = (failure_reason IS NOT NULL))
);
CREATE INDEX source_versions_tenant_state ON source_versions (tenant_id, state, processing_state);

CREATE TABLE extracted_documents (
    version_id text PRIMARY KEY REFERENCES source_versions ON DELETE CASCADE,
    tenant_id  text NOT NULL,
    document   jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- One chunk table, one corpus. A chunk id is stable from (source, position);
-- the row records which version its text came from.
CREATE TABLE chunks (
    chunk_id       text PRIMARY KEY,
    tenant_id      text NOT NULL REFERENCES tenants ON DELETE CASCADE,
    source_id      text NOT NULL REFERENCES sources ON DELETE CASCADE,
    version_id     text NOT NULL,
    position       integer NOT NULL,
    heading_path   text[] NOT NULL,
    body           text NOT NULL,
    kind           text NOT NULL,
    location       jsonb NOT NULL,
    content_hash   text NOT NULL,
    token_count    integer NOT NULL,
    low_confidence boolean NOT NULL DEFAULT false,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source_id, position)
);
CREATE INDEX chunks_tenant_source ON chunks (tenant_id, source_id);

-- Which version of a source each embedding model has embedded and published.
CREATE TABLE version_models (
    version_id   text NOT NULL REFERENCES source_versions ON DELETE CASCADE,
    model_key    text NOT NULL,
    tenant_id    text NOT NULL,
    embedded_at  timestamptz,
    published_at timestamptz,
    PRIMARY KEY (version_id, model_key)
);
CREATE INDEX version_models_tenant ON version_models (tenant_id, model_key);
