-- Vector tables for the OpenAI-compatible embedding slots (issue 36): one per
-- dimension an endpoint may answer with (384: bge-small/MiniLM servers; 768:
-- bge-base, nomic; 1024: bge-large, e5-large, bge-m3; 1536: OpenAI
-- text-embedding-3-small). The same shape as every model table after 0023:
-- no graph spanning tenants, the live-tenant btree, the tenant wall.
-- depends: 0024_citation_snapshots

CREATE TABLE embeddings_openai_compatible_384 (
    chunk_id     text PRIMARY KEY,
    tenant_id    text NOT NULL,
    source_id    text NOT NULL,
    version_id   text NOT NULL,
    subjects     text[] NOT NULL,
    media_type   text NOT NULL,
    content_hash text NOT NULL,
    live         boolean NOT NULL DEFAULT false,
    embedding    vector(384) NOT NULL,
    tags         text[] NOT NULL DEFAULT '{}',
    source_date  timestamptz,
    layer        text NOT NULL DEFAULT 'raw'
);
CREATE INDEX embeddings_openai_compatible_384_source ON embeddings_openai_compatible_384 (tenant_id, source_id);
CREATE INDEX embeddings_openai_compatible_384_hash ON embeddings_openai_compatible_384 (tenant_id, content_hash);
CREATE INDEX embeddings_openai_compatible_384_live_tenant ON embeddings_openai_compatible_384 (tenant_id) WHERE live;

CREATE TABLE embeddings_openai_compatible_768 (
    chunk_id     text PRIMARY KEY,
    tenant_id    text NOT NULL,
    source_id    text NOT NULL,
    version_id   text NOT NULL,
    subjects     text[] NOT NULL,
    media_type   text NOT NULL,
    content_hash text NOT NULL,
    live         boolean NOT NULL DEFAULT false,
    embedding    vector(768) NOT NULL,
    tags         text[] NOT NULL DEFAULT '{}',
    source_date  timestamptz,
    layer        text NOT NULL DEFAULT 'raw'
);
CREATE INDEX embeddings_openai_compatible_768_source ON embeddings_openai_compatible_768 (tenant_id, source_id);
CREATE INDEX embeddings_openai_compatible_768_hash ON embeddings_openai_compatible_768 (tenant_id, content_hash);
CREATE INDEX embeddings_openai_compatible_768_live_tenant ON embeddings_openai_compatible_768 (tenant_id) WHERE live;

CREATE TABLE embeddings_openai_compatible_1024 (
    chunk_id     text PRIMARY KEY,
    tenant_id    text NOT NULL,
    source_id    text NOT NULL,
    version_id   text NOT NULL,
    subjects     text[] NOT NULL,
    media_type   text NOT NULL,
    content_hash text NOT NULL,
    live         boolean NOT NULL DEFAULT false,
    embedding    vector(1024) NOT NULL,
    tags         text[] NOT NULL DEFAULT '{}',
    source_date  timestamptz,
    layer        text NOT NULL DEFAULT 'raw'
);
CREATE INDEX embeddings_openai_compatible_1024_source ON embeddings_openai_compatible_1024 (tenant_id, source_id);
CREATE INDEX embeddings_openai_compatible_1024_hash ON embeddings_openai_compatible_1024 (tenant_id, content_hash);
CREATE INDEX embeddings_openai_compatible_1024_live_tenant ON embeddings_openai_compatible_1024 (tenant_id) WHERE live;

CREATE TABLE embeddings_openai_compatible_1536 (
    chunk_id     text PRIMARY KEY,
    tenant_id    text NOT NULL,
    source_id    text NOT NULL,
    version_id   text NOT NULL,
    subjects     text[] NOT NULL,
    media_type   text NOT NULL,
    content_hash text NOT NULL,
    live         boolean NOT NULL DEFAULT false,
    embedding    vector(1536) NOT NULL,
    tags         text[] NOT NULL DEFAULT '{}',
    source_date  timestamptz,
    layer        text NOT NULL DEFAULT 'raw'
);
CREATE INDEX embeddings_openai_compatible_1536_source ON embeddings_openai_compatible_1536 (tenant_id, source_id);
CREATE INDEX embeddings_openai_compatible_1536_hash ON embeddings_openai_compatible_1536 (tenant_id, content_hash);
CREATE INDEX embeddings_openai_compatible_1536_live_tenant ON embeddings_openai_compatible_1536 (tenant_id) WHERE live;

-- (PERFORM, not SELECT: yoyo prints a SELECT's rows to stdout)
DO $$
BEGIN
    PERFORM groundwork_wall(t)
    FROM unnest(ARRAY['embeddings_openai_compatible_384', 'embeddings_openai_compatible_768', 'embeddings_openai_compatible_1024', 'embeddings_openai_compatible_1536']) AS t;
END
$$;
