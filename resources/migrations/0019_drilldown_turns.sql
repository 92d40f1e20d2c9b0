-- Drill-down calls per API key and server-issued turn ('' is the key's own
-- bucket), counted in the database so the HTTP workers and the MCP server
-- share one cap (it was counted in each process's memory). A row lives for
-- its window; the next call after the window starts it again.
-- depends: 0018_live_tenant_index
CREATE TABLE drilldown_turns (
    tenant_id  text NOT NULL,
    key_id     text NOT NULL REFERENCES api_keys ON DELETE CASCADE,
    turn       text NOT NULL,
    calls      integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (key_id, turn)
);
DO $$
BEGIN
    PERFORM groundwork_wall('drilldown_turns');
END
$$;
