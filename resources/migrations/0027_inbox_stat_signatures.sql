-- The folder connector's stat signatures ("Operable: quiet when idle"): an
-- hourly rescan read and hashed every inbox file to find nothing changed (20 s
-- each hour for a 5,183-file tenant). Each inbox source keeps the
-- (size, mtime_ns, inode) its file had when it was last read, the version that
-- read produced, and when: a file whose stat still matches, whose version is
-- still current and whose last read is recent is not read again. The time
-- bounds the trust: a same-size, same-mtime edit is found by the next read
-- after the verification interval (groundwork/connectors/folder_sync.py).
-- depends: 0026_openai_compatible_models
ALTER TABLE sources ADD COLUMN inbox_stat text;
ALTER TABLE sources ADD COLUMN inbox_stat_version text;
ALTER TABLE sources ADD COLUMN inbox_verified_at timestamptz;
