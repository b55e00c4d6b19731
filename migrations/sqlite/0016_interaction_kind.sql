-- The request's kind (`approval` or `questions`) as a column, so the pending gauge is
-- a COUNT(*) … GROUP BY on an index instead of decoding every pending body.
ALTER TABLE interactions ADD COLUMN kind TEXT NOT NULL DEFAULT 'approval';
UPDATE interactions SET kind = 'questions' WHERE json_extract(body, '$.request.kind.kind') = 'questions';
CREATE INDEX interactions_by_status_kind ON interactions (status, kind);
