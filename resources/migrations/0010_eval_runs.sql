-- Evals: what each tenant is evaluated on, and every run with its
-- configuration and results, so runs compare over time. Behind the tenant wall.
-- depends: 0009_tenant_wall
CREATE TABLE eval_suites (
    tenant_id  text PRIMARY KEY REFERENCES tenants ON DELETE CASCADE,
    suite      jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE eval_runs (
    run_id      text PRIMARY KEY,
    tenant_id   text NOT NULL REFERENCES tenants ON DELETE CASCADE,
    model_key   text NOT NULL,
    suite       jsonb NOT NULL,
    results     jsonb NOT NULL,
    ndcg_hybrid double precision,
    dagster_run text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX eval_runs_history ON eval_runs (tenant_id, model_key, created_at DESC);

DO $$
DECLARE
    owner_role text := current_user;
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['eval_suites', 'eval_runs'] LOOP
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO groundwork_request', t);
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY owner_all ON %I TO %I USING (true) WITH CHECK (true)', t, owner_role);
        EXECUTE format(
            'CREATE POLICY tenant_wall ON %I TO groundwork_request '
            'USING (tenant_id = current_setting(''groundwork.tenant_id'', true)) '
            'WITH CHECK (tenant_id = current_setting(''groundwork.tenant_id'', true))', t);
    END LOOP;
END
$$;
