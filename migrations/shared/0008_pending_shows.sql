-- Requests not yet shown in a chat: one row per (interaction, chat), written with the
-- interaction and removed once the platform accepted the message (in the same
-- transaction as its message_ref). A failed send stays, with a backoff in
-- `next_at_ms`, until it is shown or the interaction ends, and survives a restart.
-- `claimed_by`/`claimed_until_ms` say which replica is sending it now, so two
-- replicas never show the same request twice.
CREATE TABLE pending_shows (
    interaction_id   TEXT NOT NULL REFERENCES interactions (id) ON DELETE CASCADE,
    platform         TEXT NOT NULL,
    chat_id          TEXT NOT NULL,
    thread_id        TEXT NOT NULL,
    attempts         BIGINT NOT NULL,
    next_at_ms       BIGINT NOT NULL,
    claimed_by       TEXT NOT NULL,
    claimed_until_ms BIGINT NOT NULL,
    last_error       TEXT,
    PRIMARY KEY (interaction_id, platform, chat_id, thread_id)
);
CREATE INDEX pending_shows_due ON pending_shows (next_at_ms);
