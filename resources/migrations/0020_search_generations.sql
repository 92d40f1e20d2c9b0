-- A counter per tenant, raised in the same transaction as every change to the
-- tenant's rows in a chunk-row index (liveness, subjects, tags, deletion, a
-- live row rewritten): a read replica may serve a tenant's vector leg only once
-- it holds the generation the primary holds (resources/postgres/read_replica.py).
-- No foreign key to tenants, on purpose: the row outlives a tenant's erasure
-- (it holds no content), because a counter that restarted from zero would let a
-- lagging replica pass the check for a tenant re-created under the same id.
-- depends: 0018_live_tenant_index
CREATE TABLE search_generations (
    tenant_id text PRIMARY KEY,
    generation bigint NOT NULL
);

DO $$
BEGIN
    PERFORM groundwork_wall('search_generations');
END
$$;
