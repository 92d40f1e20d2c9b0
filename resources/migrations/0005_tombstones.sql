-- The tombstone ledger: what deletion removed, from which store, and when.
-- An asset check proves no store still holds a tombstoned chunk.
-- depends: 0001_core
CREATE TABLE tombstones (
    tenant_id  text NOT NULL,
    source_id  text NOT NULL,
    chunk_id   text NOT NULL,
    store      text NOT NULL,  -- 'catalog', 'keyword', 'vector:<model>', 'blob'
    removed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_id, chunk_id, store)
);
CREATE INDEX tombstones_tenant ON tombstones (tenant_id, removed_at);
