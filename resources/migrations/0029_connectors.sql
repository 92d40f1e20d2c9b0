-- Connectors (issue 34): documents from where they live, kept in sync.
-- One row per connector instance of a tenant (its kind, a name, a config that
-- holds no secret, and secret *references* only: environment variable names
-- or a secrets-file path the operator controls), the per-item state a pass
-- compares a listing page against in one set-based statement, and one row per
-- pass (counts, lag, the last error) that the control plane shows.
-- depends: 0028_tenant_limits
CREATE TABLE connector_instances (
    instance_id text PRIMARY KEY,
    tenant_id text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    kind text NOT NULL,
    name text NOT NULL,
    config jsonb NOT NULL DEFAULT '{}'::jsonb,
    secret_refs jsonb NOT NULL DEFAULT '{}'::jsonb,
    subjects text[] NOT NULL,
    paused boolean NOT NULL DEFAULT false,
    freshness_seconds integer NOT NULL DEFAULT 3600 CHECK (freshness_seconds > 0),
    interval_seconds integer NOT NULL DEFAULT 300 CHECK (interval_seconds > 0),
    -- the listing's resume point: set after a page's items are registered
    cursor text,
    pass_no bigint NOT NULL DEFAULT 0,
    -- a pass began and has not finished: the next one resumes it at the cursor
    pass_open boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);
CREATE INDEX connector_instances_kind ON connector_instances (kind) WHERE NOT paused;

CREATE TABLE connector_items (
    tenant_id text NOT NULL,
    instance_id text NOT NULL REFERENCES connector_instances (instance_id) ON DELETE CASCADE,
    item_id text NOT NULL,
    -- the listing's version token when the item was last handled
    version text NOT NULL,
    subjects text[],
    source_id text,
    origin text,
    sha256 text,
    -- ok: registered; refused: the policy said no (same version not retried);
    -- failed: a retryable error (retried next pass); alias: a new id with the
    -- bytes of a known item, resolved at the end of the pass (move or copy)
    state text NOT NULL CHECK (state IN ('ok', 'refused', 'failed', 'alias')),
    last_error text,
    seen_pass bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_id, item_id)
);
CREATE INDEX connector_items_sha ON connector_items (instance_id, sha256);


CREATE TABLE connector_passes (
    tenant_id text NOT NULL,
    instance_id text NOT NULL REFERENCES connector_instances (instance_id) ON DELETE CASCADE,
    pass_no bigint NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    seen bigint NOT NULL DEFAULT 0,
    changed bigint NOT NULL DEFAULT 0,
    deleted bigint NOT NULL DEFAULT 0,
    failed bigint NOT NULL DEFAULT 0,
    rescoped bigint NOT NULL DEFAULT 0,
    last_error text,
    PRIMARY KEY (instance_id, pass_no)
);

DO $$
BEGIN
    PERFORM groundwork_wall(t) FROM unnest(ARRAY[
        'connector_instances', 'connector_items', 'connector_passes'
    ]) AS t;
END
$$;
