-- The document type on every index row (issue #35, "One corpus"): a search can
-- keep an artifact's passages, or a registered file's, inside each leg, like
-- the tag and date filters (0007). Denormalized rather than joined to
-- `sources`: a source's doc_type never changes (registration refuses a
-- switch), so the copy cannot go stale; the filter is then one more condition
-- on the row the scan already reads, where a join adds a semi-join to
-- `sources` (under the tenant wall's policy) to every search. Measured on one
-- tenant's exact scan (3,000 rows of 384 dims, temp tables, a loaded 2-core
-- host, 200 searches): artifacts only 2.2 ms with the column against 3.6 ms
-- joined; sources only 8.3 against 8.0 ms, within noise. The keyword engine
-- (OpenSearch) cannot join at all, so its documents carry the field anyway,
-- from the same IndexedChunk.
-- Adding a column with a constant default rewrites no table (PostgreSQL 11+);
-- the backfill touches only artifacts' rows. A model table added later must
-- carry the column too.
-- depends: 0030_artifact_roles
ALTER TABLE embeddings_bge_small_en_v15_q ADD COLUMN document_type text NOT NULL DEFAULT 'source';
ALTER TABLE embeddings_minilm_l6_v2_int8 ADD COLUMN document_type text NOT NULL DEFAULT 'source';
ALTER TABLE embeddings_bge_small_en_v15 ADD COLUMN document_type text NOT NULL DEFAULT 'source';
ALTER TABLE embeddings_e5_small_v2_q ADD COLUMN document_type text NOT NULL DEFAULT 'source';
ALTER TABLE embeddings_openai_compatible_384 ADD COLUMN document_type text NOT NULL DEFAULT 'source';
ALTER TABLE embeddings_openai_compatible_768 ADD COLUMN document_type text NOT NULL DEFAULT 'source';
ALTER TABLE embeddings_openai_compatible_1024 ADD COLUMN document_type text NOT NULL DEFAULT 'source';
ALTER TABLE embeddings_openai_compatible_1536 ADD COLUMN document_type text NOT NULL DEFAULT 'source';
ALTER TABLE keyword_chunks ADD COLUMN document_type text NOT NULL DEFAULT 'source';

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY[
        'embeddings_bge_small_en_v15_q', 'embeddings_minilm_l6_v2_int8',
        'embeddings_bge_small_en_v15', 'embeddings_e5_small_v2_q',
        'embeddings_openai_compatible_384', 'embeddings_openai_compatible_768',
        'embeddings_openai_compatible_1024', 'embeddings_openai_compatible_1536',
        'keyword_chunks']
    LOOP
        EXECUTE format(
            'UPDATE %I r SET document_type = ''artifact'' FROM sources s '
            'WHERE s.source_id = r.source_id AND s.doc_type = ''artifact''', t);
    END LOOP;
END
$$;

-- An OpenSearch document written before this carries no document type (the
-- mapping gains the field on the next connect, ensure_schema): read as
-- "source", which every registered file's is. Artifacts' current versions go
-- through the keyword stage once more, which rewrites their documents with
-- the field (the same version keeps its liveness; nothing is unpublished).
UPDATE source_versions v SET keyword_indexed_at = NULL
FROM sources s
WHERE s.source_id = v.source_id AND s.doc_type = 'artifact'
  AND s.current_version_id = v.version_id AND v.keyword_indexed_at IS NOT NULL;
