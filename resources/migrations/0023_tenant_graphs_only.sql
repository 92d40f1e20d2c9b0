-- No HNSW graph spans tenants any more: every search is under a tenant filter,
-- and on the shared graph that filter returned the wrong rows (bench/scale.py,
-- 200k chunks: recall@10 0.79-0.90 for filtered tenants even at ef_search 800)
-- while it cost ~2 KB per vector (639 MB at 327k vectors) and an insert into one
-- ever-growing graph per chunk (the 1M load's embed stage: ~240 chunks/s).
-- A tenant below the line is searched exactly through the live-tenant btree
-- (0018); a larger one on its own partial graph, built before its rows go live
-- (PgVectorIndex.refresh_tenant_graphs).
-- depends: 0022_more_models
DROP INDEX IF EXISTS embeddings_bge_small_en_v15_q_hnsw;
DROP INDEX IF EXISTS embeddings_minilm_l6_v2_int8_hnsw;
DROP INDEX IF EXISTS embeddings_bge_small_en_v15_hnsw;
DROP INDEX IF EXISTS embeddings_e5_small_v2_q_hnsw;
