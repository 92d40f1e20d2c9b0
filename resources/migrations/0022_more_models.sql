-- Vector tables for the model partitions bge_small_en_v15 (fp32) and
-- e5_small_v2_q (issue 20), the same shape as the first two after every
-- migration since 0002: columns, HNSW/source/hash/live-tenant indexes, the
-- tenant wall (0009).
-- depends: 0021_summary_layer

CREATE TABLE embeddings_bge_small_en_v15 (
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
CREATE INDEX embeddings_bge_small_en_v15_hnsw ON embeddings_bge_small_en_v15 USING hnsw (embedding vector_cosine_ops);
CREATE INDEX embeddings_bge_small_en_v15_source ON embeddings_bge_small_en_v15 (tenant_id, source_id);
CREATE INDEX embeddings_bge_small_en_v15_hash ON embeddings_bge_small_en_v15 (tenant_id, content_hash);
CREATE INDEX embeddings_bge_small_en_v15_live_tenant ON embeddings_bge_small_en_v15 (tenant_id) WHERE live;

CREATE TABLE embeddings_e5_small_v2_q (
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
CREATE INDEX embeddings_e5_small_v2_q_hnsw ON embeddings_e5_small_v2_q USING hnsw (embedding vector_cosine_ops);
CREATE INDEX embeddings_e5_small_v2_q_source ON embeddings_e5_small_v2_q (tenant_id, source_id);
CREATE INDEX embeddings_e5_small_v2_q_hash ON embeddings_e5_small_v2_q (tenant_id, content_hash);
CREATE INDEX embeddings_e5_small_v2_q_live_tenant ON embeddings_e5_small_v2_q (tenant_id) WHERE live;

-- (PERFORM, not SELECT: yoyo prints a SELECT's rows to stdout)
DO $$
BEGIN
    PERFORM groundwork_wall(t)
    FROM unnest(ARRAY['embeddings_bge_small_en_v15', 'embeddings_e5_small_v2_q']) AS t;
END
$$;
