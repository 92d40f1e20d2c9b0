-- A sender can cancel an upload session it gave up on (DELETE /v1/uploads/{id}):
-- its staged bytes go at once (an S3 multipart upload aborted) instead of
-- waiting out the session's 24 hours.
-- depends: 0030_artifact_roles
ALTER TABLE upload_sessions DROP CONSTRAINT upload_sessions_state_check;
ALTER TABLE upload_sessions ADD CONSTRAINT upload_sessions_state_check
    CHECK (state IN ('open', 'completed', 'refused', 'cancelled'));
