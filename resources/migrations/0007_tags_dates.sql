-- Tags on sources and a source date, denormalized onto every index row so tag
-- and date-range filters run inside each search leg.
-- depends: 0002_vectors 0003_keyword_fulltext
ALTER TABLE sources ADD COLUMN tags text[] NOT NULL DEFAULT '{}';
ALTER TABLE embeddings_bge_small_en_v15_q ADD COLUMN tags text[] NOT NULL DEFAULT '{}';
ALTER TABLE embeddings_bge_small_en_v15_q ADD COLUMN source_date timestamptz;
ALTER TABLE embeddings_minilm_l6_v2_int8 ADD COLUMN tags text[] NOT NULL DEFAULT '{}';
ALTER TABLE embeddings_minilm_l6_v2_int8 ADD COLUMN source_date timestamptz;
ALTER TABLE keyword_chunks ADD COLUMN tags text[] NOT NULL DEFAULT '{}';
ALTER TABLE keyword_chunks ADD COLUMN source_date timestamptz;
