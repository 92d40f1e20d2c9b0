-- An eval run keeps the served state it was scored on (its tenant's search
-- generation and its suite's version, read when it started), so the
-- evaluation sensor counts a run for that state whoever started it: the
-- demo's own evaluation was followed by the sensor's of the same state.
-- Runs recorded before keep NULL (the sensor falls back to "ever evaluated").
-- depends: 0034_upload_cancel
ALTER TABLE eval_runs ADD COLUMN search_generation bigint, ADD COLUMN suite_updated_at timestamptz;
