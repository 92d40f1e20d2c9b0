-- Reading a system corpus document whole (issue #35): a tenant that finds a
-- system passage may read the document it came from (its extraction, status
-- and tables) as it reads its own, while its switch is on. The same SELECT-only
-- policy as 0031_system_corpus, on the two tables those reads join.
-- (Part of migration 0031, the number reserved for the system corpus.)
-- depends: 0031_system_corpus_inline
DO $$
BEGIN
    PERFORM groundwork_system_readable(t)
    FROM unnest(ARRAY['extracted_documents', 'version_models']) AS t;
END
$$;
