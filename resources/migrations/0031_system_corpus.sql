-- The shared system corpus (issue #35, layered retrieval): the documents of
-- the reserved tenant `system` are read by every tenant beside its own (owner
-- in (tenant, system)), unless the tenant turned that off (tenants.system_corpus,
-- on by default). Written only by a system tenant key holding the new scope
-- system:admin (groundwork/services/scopes.py), never by another tenant.
--
-- The second wall follows: a request connection (role groundwork_request,
-- migration 0009) may SELECT the system tenant's rows of the tables a search
-- and its re-check read, while its own tenant's switch is on. SELECT only: the
-- policy adds no INSERT, UPDATE or DELETE right, so a walled connection still
-- writes its own tenant's rows alone. The switch is read from the tenants row
-- itself (the caller's own row is visible behind its wall), so a flip holds
-- from the next statement, whatever an application cache holds.
-- A migration that adds a vector table for a new model calls
-- groundwork_system_readable on it too (beside groundwork_wall).
-- depends: 0026_openai_compatible_models 0028_tenant_limits
ALTER TABLE tenants ADD COLUMN system_corpus boolean NOT NULL DEFAULT true;

ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check CHECK (scopes <@
    '{files:read,files:write,files:delete,sources:admin,artifacts:write,artifacts:approve,platform:admin,system:admin}'::text[]);

-- Whether the request connection's tenant reads rows owned by `owner` as the
-- system corpus's. An inlinable SQL function: the tenants lookup does not
-- depend on the row, so it is planned as one init step per statement.
CREATE FUNCTION groundwork_reads_system(owner text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN owner = 'system'
    AND coalesce(current_setting('groundwork.tenant_id', true), '') <> 'system'
    AND coalesce((SELECT t.system_corpus FROM tenants t
                  WHERE t.tenant_id = current_setting('groundwork.tenant_id', true)), false);

CREATE FUNCTION groundwork_system_readable(t text) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    EXECUTE format(
        'CREATE POLICY system_corpus_read ON %I AS PERMISSIVE FOR SELECT TO groundwork_request '
        'USING (groundwork_reads_system(tenant_id))', t);
END
$fn$;

-- (PERFORM, not SELECT: yoyo prints a SELECT's rows to stdout)
DO $$
BEGIN
    PERFORM groundwork_system_readable(t) FROM unnest(ARRAY[
        'sources', 'source_versions', 'chunks', 'published_versions', 'keyword_chunks',
        'search_generations'
    ]) AS t;
    PERFORM groundwork_system_readable(c.relname::text)
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE 'embeddings\_%';
END
$$;
