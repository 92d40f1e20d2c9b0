-- Per-tenant serving model with one-step rollback.
-- depends: 0001_core
ALTER TABLE tenants ADD COLUMN previous_model text;
ALTER TABLE tenants ADD COLUMN model_switched_at timestamptz;
