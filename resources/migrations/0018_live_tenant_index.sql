-- A btree on each vector table's live rows by tenant: the vector search counts
-- a tenant's live rows (bounded, index-only) to choose between an exact scan
-- and the HNSW graph, and the exact scan reads the tenant's rows through it.
-- bench/scale.py: at 200k chunks the count of up to 20,001 rows costs <= 0.8 ms.
-- depends: 0017_tenant_fusion
CREATE INDEX embeddings_bge_small_en_v15_q_live_tenant ON embeddings_bge_small_en_v15_q (tenant_id)
    WHERE live;
CREATE INDEX embeddings_minilm_l6_v2_int8_live_tenant ON embeddings_minilm_l6_v2_int8 (tenant_id)
    WHERE live;
