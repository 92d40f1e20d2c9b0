-- Artifacts: a document of type `artifact` in the ordinary corpus plus what a
-- document has no notion of (format, generation, provenance, receipts,
-- rendered files by role). Title, path, body and indexing state stay on the
-- document (sources/source_versions); type is the only discriminator.
-- depends: 0009_tenant_wall
ALTER TABLE sources ADD COLUMN doc_type text NOT NULL DEFAULT 'file'
    CHECK (doc_type IN ('file', 'artifact'));

CREATE TABLE artifacts (
    artifact_id text PRIMARY KEY,
    tenant_id   text NOT NULL REFERENCES tenants ON DELETE CASCADE,
    source_id   text NOT NULL UNIQUE REFERENCES sources ON DELETE CASCADE,
    format      text NOT NULL DEFAULT 'markdown',
    generation  bigint NOT NULL DEFAULT 0 CHECK (generation >= 0),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE artifact_versions (
    artifact_id       text NOT NULL REFERENCES artifacts ON DELETE CASCADE,
    generation        bigint NOT NULL CHECK (generation >= 1),
    tenant_id         text NOT NULL,
    source_version_id text NOT NULL REFERENCES source_versions ON DELETE CASCADE,
    provenance        jsonb NOT NULL CHECK (provenance ? 'tool' AND provenance ? 'inputs'
                                            AND provenance ? 'run' AND provenance ? 'derived_from'),
    restored_from     bigint,
    summary           text[] NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (artifact_id, generation)
);

CREATE TABLE artifact_files (
    file_id     text PRIMARY KEY,
    tenant_id   text NOT NULL,
    artifact_id text NOT NULL REFERENCES artifacts ON DELETE CASCADE,
    generation  bigint NOT NULL,
    role        text NOT NULL CHECK (role IN ('primary', 'preview', 'source', 'export')),
    format      text NOT NULL,
    media_type  text NOT NULL,
    blob_key    text NOT NULL,
    sha256      text NOT NULL,
    size_bytes  bigint NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX artifact_files_version ON artifact_files (artifact_id, generation);

-- One export per (tenant, artifact, version, format): a second request, even a
-- concurrent one, gets the same file. Never `rendered` without a file.
CREATE TABLE artifact_exports (
    export_id      text PRIMARY KEY,
    tenant_id      text NOT NULL,
    artifact_id    text NOT NULL REFERENCES artifacts ON DELETE CASCADE,
    generation     bigint NOT NULL,
    format         text NOT NULL,
    state          text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'rendered', 'failed')),
    file_id        text REFERENCES artifact_files,
    failure_reason text,
    unrenderable   text[] NOT NULL DEFAULT '{}',
    receipt        jsonb,
    renders        integer NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, artifact_id, generation, format),
    CHECK ((state = 'rendered') = (file_id IS NOT NULL)),
    CHECK ((state = 'failed') = (failure_reason IS NOT NULL))
);

-- (PERFORM, not SELECT: yoyo prints a SELECT's rows to stdout)
DO $$
BEGIN
    PERFORM groundwork_wall(t) FROM unnest(ARRAY['artifacts', 'artifact_versions', 'artifact_files', 'artifact_exports']) AS t;
END
$$;
