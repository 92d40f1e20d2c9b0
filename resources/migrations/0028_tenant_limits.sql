-- Per-tenant limits ("Operable: fair under load"): request rates (token
-- buckets, for the tenant as a whole and for each of its keys) and storage
-- quotas (live documents, stored bytes). NULL is no limit, the default, so
-- nothing existing changes. Read with the key in the one authentication
-- statement (resources/postgres/catalog_parts/tenants.py), so checking a rate
-- costs a request no extra round trip.
-- depends: 0027_inbox_stat_signatures
ALTER TABLE tenants ADD COLUMN requests_per_second double precision
    CHECK (requests_per_second > 0);
ALTER TABLE tenants ADD COLUMN burst integer CHECK (burst >= 1);
ALTER TABLE tenants ADD COLUMN key_requests_per_second double precision
    CHECK (key_requests_per_second > 0);
ALTER TABLE tenants ADD COLUMN key_burst integer CHECK (key_burst >= 1);
ALTER TABLE tenants ADD COLUMN max_documents bigint CHECK (max_documents >= 0);
ALTER TABLE tenants ADD COLUMN max_bytes bigint CHECK (max_bytes >= 0);

-- The operator's scope: a key that reads and sets any tenant's limits
-- (PUT /v1/admin/tenants/{tenant_id}/limits). Granted explicitly only.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check CHECK (scopes <@
    '{files:read,files:write,files:delete,sources:admin,artifacts:write,artifacts:approve,platform:admin}'::text[]);
