-- A citation's snapshot text is stored once per tenant and content, not once per
-- citation: popular chunks are cited over and over (the bench database held
-- 1,427,010 citations over 10,016 distinct snapshots, 2.0 KB each, 2.9 GB).
-- A citation keeps its id, key, source scope and the time it was retrieved.
-- snapshot_id: a digest of the tenant and the snapshot without its time
-- (Reading.record_citations computes it the same way, in SQL).
-- depends: 0023_tenant_graphs_only
CREATE TABLE citation_snapshots (
    snapshot_id text PRIMARY KEY,
    tenant_id   text NOT NULL REFERENCES tenants ON DELETE CASCADE,
    source_id   text NOT NULL,
    snapshot    jsonb NOT NULL
);
CREATE INDEX citation_snapshots_source ON citation_snapshots (tenant_id, source_id);

ALTER TABLE citations ADD COLUMN snapshot_id text, ADD COLUMN retrieved_at timestamptz;
UPDATE citations SET
    snapshot_id = encode(sha256(convert_to(tenant_id || (snapshot - 'retrieved_at')::text, 'UTF8')), 'hex'),
    retrieved_at = coalesce((snapshot ->> 'retrieved_at')::timestamptz, created_at);
INSERT INTO citation_snapshots (snapshot_id, tenant_id, source_id, snapshot)
    SELECT DISTINCT ON (snapshot_id) snapshot_id, tenant_id, source_id, snapshot - 'retrieved_at'
    FROM citations ORDER BY snapshot_id;
ALTER TABLE citations DROP COLUMN snapshot;
ALTER TABLE citations ALTER COLUMN snapshot_id SET NOT NULL, ALTER COLUMN retrieved_at SET NOT NULL;

DO $$
BEGIN
    PERFORM groundwork_wall('citation_snapshots');
END
$$;
