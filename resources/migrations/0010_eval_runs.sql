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

-- (PERFORM, not SELECT: yoyo prints a SELECT's rows to stdout)
DO $$
BEGIN
    PERFORM groundwork_wall(t) FROM unnest(ARRAY['eval_suites', 'eval_runs']) AS t;
END
$$;
