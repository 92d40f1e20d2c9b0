-- One vector table and HNSW index per embedding model, so models of different
-- dimensions coexist. Subjects and liveness are denormalized onto each row so
-- authorization and publication are filtered inside the vector query.
-- depends: 0001_core
CREATE TABLE embeddings_bge_small_en_v15_q (
    chunk_id     text PRIMARY KEY,
    tenant_id    text NOT NULL,
    source_id    text NOT NULL,
    version_id   text NOT NULL,
    subjects     text[] NOT NULL,
    media_type   text NOT NULL,
    content_hash text NOT NULL,
    live         boolean NOT NULL DEFAULT false,
    embedding    vector(384) NOT NULL
);
CREATE INDEX embeddings_bge_small_en_v15_q_hnsw ON embeddings_bge_small_en_v15_q
    USING hnsw (embedding vector_cosine_ops);
CREATE INDEX embeddings_bge_small_en_v15_q_source ON embeddings_bge_small_en_v15_q (tenant_id, source_id);
CREATE INDEX embeddings_bge_small_en_v15_q_hash ON embeddings_bge_small_en_v15_q (tenant_id, content_hash);

CREATE TABLE embeddings_minilm_l6_v2_int8 (
    chunk_id     text PRIMARY KEY,
    tenant_id    text NOT NULL,
    source_id    text NOT NULL,
    version_id   text NOT NULL,
    subjects     text[] NOT NULL,
    media_type   text NOT NULL,
    content_hash text NOT NULL,
    live         boolean NOT NULL DEFAULT false,
    embedding    vector(384) NOT NULL
);
CREATE INDEX embeddings_minilm_l6_v2_int8_hnsw ON embeddings_minilm_l6_v2_int8
    USING hnsw (embedding vector_cosine_ops);
CREATE INDEX embeddings_minilm_l6_v2_int8_source ON embeddings_minilm_l6_v2_int8 (tenant_id, source_id);
CREATE INDEX embeddings_minilm_l6_v2_int8_hash ON embeddings_minilm_l6_v2_int8 (tenant_id, content_hash);
