-- Scopes for every operation (one table in groundwork/services/scopes.py):
-- files:delete and sources:admin split off files:write, artifacts:approve is
-- separate from artifacts:write so a proposer cannot approve its own
-- destructive edit. Existing keys could delete before, so they keep that;
-- re-scoping (sources:admin) and approval must be granted explicitly.
-- depends: 0012_key_scopes
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check CHECK (scopes <@
    '{files:read,files:write,files:delete,sources:admin,artifacts:write,artifacts:approve}'::text[]);
ALTER TABLE api_keys ALTER COLUMN scopes SET DEFAULT
    '{files:read,files:write,files:delete,artifacts:write}';
UPDATE api_keys SET scopes = array_append(scopes, 'files:delete')
    WHERE 'files:write' = ANY(scopes) AND NOT 'files:delete' = ANY(scopes);
