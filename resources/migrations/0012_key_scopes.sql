-- What an API key may do with the tools, beyond whose files it sees:
-- files:read, files:write, artifacts:write. Existing keys keep every scope.
-- depends: 0011_artifacts
ALTER TABLE api_keys ADD COLUMN scopes text[] NOT NULL
    DEFAULT '{files:read,files:write,artifacts:write}'
    CHECK (scopes <@ '{files:read,files:write,artifacts:write}'::text[]);
