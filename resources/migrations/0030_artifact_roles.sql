-- Artifact roles: a revision swaps the current primary/preview/source rows in
-- its commit and queues the superseded blobs here, in the same transaction;
-- after the commit they are purged (a blob another row still references is
-- kept) and the row goes. A purge that fails stays queued with its error and
-- attempts, and is retried (the next revision of the tenant's artifacts, the
-- deletion sweep), so a crash between the commit and the purge, or a store
-- that refuses a delete, leaves a reported row, never an unknown orphan.
-- depends: 0011_artifacts 0028_tenant_limits
CREATE TABLE artifact_blob_purges (
    tenant_id   text NOT NULL,
    blob_key    text NOT NULL,
    artifact_id text NOT NULL,
    queued_at   timestamptz NOT NULL DEFAULT now(),
    attempts    integer NOT NULL DEFAULT 0,
    last_error  text,
    PRIMARY KEY (tenant_id, blob_key)
);

-- Whether any row of any tenant still names a content-addressed blob: the
-- request role sees only its own tenant's rows, and identical bytes of two
-- tenants are one blob, so the check runs as the owner and answers only yes/no.
CREATE FUNCTION groundwork_blob_referenced(key text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $fn$
    SELECT EXISTS (SELECT 1 FROM source_versions WHERE blob_key = key AND state <> 'deleted')
        OR EXISTS (SELECT 1 FROM artifact_files WHERE blob_key = key)
$fn$;
GRANT EXECUTE ON FUNCTION groundwork_blob_referenced(text) TO groundwork_request;

DO $$
BEGIN
    PERFORM groundwork_wall('artifact_blob_purges');
END
$$;
