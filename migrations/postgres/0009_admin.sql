-- Admin commands (`hitl-bridge pending`, `cancel`, `audit export`). Same text in
-- ../sqlite/0009_admin.sql.

-- What each audit entry was about, kept in the entry itself: audit rows outlive the
-- interactions they describe (retention). `kind` is 'approval' or 'question' (NULL
-- for a refused message that concerned no request); `tools` is a JSON array of the
-- requested action names; `reason` says why it was cancelled or refused. NULL
-- `tools` marks an entry written before these were kept.
ALTER TABLE audit_log ADD COLUMN kind TEXT;
ALTER TABLE audit_log ADD COLUMN tools TEXT;
ALTER TABLE audit_log ADD COLUMN reason TEXT;
-- `audit export --since` reads in time order.
CREATE INDEX audit_log_by_time ON audit_log (at_ms, id);

-- Interactions settled by `hitl-bridge cancel` while bridges may be running: each
-- row is claimed once (deleted) by whichever replica rescans first, which then
-- updates the messages that show the interaction.
CREATE TABLE outside_settles (
    interaction_id TEXT PRIMARY KEY NOT NULL REFERENCES interactions (id) ON DELETE CASCADE,
    settled_at_ms  BIGINT NOT NULL
);
