-- Resumable upload sessions: bytes arrive in parts at acknowledged offsets.
-- depends: 0001_core
CREATE TABLE upload_sessions (
    upload_id     text PRIMARY KEY,
    tenant_id     text NOT NULL REFERENCES tenants ON DELETE CASCADE,
    key_id        text NOT NULL,
    filename      text NOT NULL,
    declared_size bigint NOT NULL CHECK (declared_size >= 0),
    declared_type text NOT NULL DEFAULT '',
    subjects      text[] NOT NULL,
    received      bigint NOT NULL DEFAULT 0,
    state         text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'completed', 'refused')),
    source_id     text,
    version_id    text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL DEFAULT now() + interval '24 hours',
    CHECK (received <= declared_size)
);
CREATE INDEX upload_sessions_tenant ON upload_sessions (tenant_id, created_at);
