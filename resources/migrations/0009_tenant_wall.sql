-- The second wall: row-level security, forced, on every tenant-scoped table.
-- Request handling runs as the role `groundwork_request` with the tenant in
-- the setting `groundwork.tenant_id`; that role sees and writes only rows of
-- that tenant, whatever the SQL says. Pipeline and maintenance work runs as
-- the owner (the role that ran this migration), which has its own permissive
-- policy because FORCE also binds a non-superuser owner.
-- Also: declared vs sniffed media type per version, and the quarantine state
-- for versions a malware scan flagged.
-- depends: 0004_citations 0005_tombstones 0007_tags_dates 0008_upload_sessions
ALTER TABLE source_versions ADD COLUMN declared_type text NOT NULL DEFAULT '';
ALTER TABLE source_versions DROP CONSTRAINT source_versions_state_check;
ALTER TABLE source_versions ADD CONSTRAINT source_versions_state_check
    CHECK (state IN ('pending', 'stored', 'quarantined', 'deleting', 'deleted'));
ALTER TABLE source_versions ADD COLUMN scan_result text;
CREATE INDEX source_versions_tenant_keyset ON source_versions (tenant_id, created_at, version_id);

-- groundwork_wall(table): the wall on one table (later migrations call it for theirs).
CREATE FUNCTION groundwork_wall(t text) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO groundwork_request', t);
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY owner_all ON %I TO %I USING (true) WITH CHECK (true)', t, current_user);
    EXECUTE format(
        'CREATE POLICY tenant_wall ON %I TO groundwork_request '
        'USING (tenant_id = current_setting(''groundwork.tenant_id'', true)) '
        'WITH CHECK (tenant_id = current_setting(''groundwork.tenant_id'', true))', t);
END
$fn$;

DO $$
DECLARE
    owner_role text := current_user;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'groundwork_request') THEN
        CREATE ROLE groundwork_request NOLOGIN NOSUPERUSER NOBYPASSRLS NOINHERIT;
    END IF;
    EXECUTE format('GRANT groundwork_request TO %I', owner_role);
    EXECUTE 'GRANT USAGE ON SCHEMA public TO groundwork_request';
    EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO groundwork_request';
    EXECUTE 'GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO groundwork_request';
    EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE %I IN SCHEMA public '
                   'GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO groundwork_request', owner_role);
END
$$;

-- (PERFORM, not SELECT: yoyo prints a SELECT's rows to stdout)
DO $$
BEGIN
    PERFORM groundwork_wall(t) FROM unnest(ARRAY[
    'tenants', 'api_keys', 'sources', 'source_versions', 'extracted_documents', 'chunks',
    'version_models', 'embeddings_bge_small_en_v15_q', 'embeddings_minilm_l6_v2_int8',
    'keyword_chunks', 'citations', 'tombstones', 'upload_sessions'
]) AS t;
END
$$;

-- An upload may add a version to an existing source instead of creating one.
ALTER TABLE upload_sessions ADD COLUMN target_source_id text;
