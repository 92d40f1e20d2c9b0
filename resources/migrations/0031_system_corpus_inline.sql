-- The system corpus's read policy (0031_system_corpus), made cheap per row.
-- Its function read the caller's switch with a subquery on `tenants`, and a
-- SQL function holding a subquery is never inlined: every system row a search
-- visited ran it again (bench/system_corpus.py: a tenant's search with the
-- system corpus p50 114 ms against 10 ms without it, the system arm's graph
-- walk paying for each row it looked at). The switch now travels like the
-- tenant: the wall sets `groundwork.system_corpus` at each checkout from the
-- tenants row (resources/postgres/tenant_wall.py), so the function is one
-- comparison the planner inlines, and a flip holds from the next checkout.
-- (Part of migration 0031, the number reserved for the system corpus.)
-- depends: 0031_system_corpus
CREATE OR REPLACE FUNCTION groundwork_reads_system(owner text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN owner = 'system' AND current_setting('groundwork.system_corpus', true) = 'on';
