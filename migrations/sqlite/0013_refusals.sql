-- Strangers' refusals are windowed (access.refusal_window_secs). Same text in
-- ../postgres/0013_refusals.sql.

-- How many attempts an audit entry stands for: 1 for every entry but a stranger's
-- refusal, which is written once per window and counted up in place while the window
-- lasts. Existing entries each recorded one attempt.
ALTER TABLE audit_log ADD COLUMN attempts BIGINT NOT NULL DEFAULT 1;

-- The open refusal window of each (platform, chat, stranger): when it opened (the
-- stranger was answered then) and the audit entry counting its attempts. Shared by
-- replicas and kept across restarts; a row whose window has passed is replaced when
-- the stranger tries again, and expired rows are swept whenever a window opens.
CREATE TABLE refusal_windows (
    platform     TEXT NOT NULL,
    chat_id      TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    opened_at_ms BIGINT NOT NULL,
    audit_id     BIGINT NOT NULL,
    PRIMARY KEY (platform, chat_id, user_id)
);
CREATE INDEX refusal_windows_by_time ON refusal_windows (opened_at_ms);
