-- The access predicate, written once: a caller reads a row when the row's
-- subjects share one with the caller's, and a caller with no subjects reads
-- nothing. Every query that reads tenant content calls it (an inlinable SQL
-- function, so the planner sees the plain expression and keeps its indexes).
-- depends: 0014_scopes_delete_admin_approve
CREATE FUNCTION groundwork_readable(row_subjects text[], caller_subjects text[])
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN cardinality(caller_subjects) > 0 AND row_subjects && caller_subjects;
