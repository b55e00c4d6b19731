-- Where a request could not be shown because the platform refused the chat for good
-- (chat not found, the bot not in the channel or blocked by the person): one row per
-- (interaction, chat), written in the same transaction that removes its
-- pending_shows row, so a restart never tries it again. `error` is the platform's
-- reason, shown to the pusher (`undelivered` in the request's state). Kept after the
-- request ends, for its callback; removed with the interaction.
CREATE TABLE refused_shows (
    interaction_id TEXT NOT NULL REFERENCES interactions (id) ON DELETE CASCADE,
    platform       TEXT NOT NULL,
    chat_id        TEXT NOT NULL,
    thread_id      TEXT NOT NULL,
    error          TEXT NOT NULL,
    at_ms          BIGINT NOT NULL,
    PRIMARY KEY (interaction_id, platform, chat_id, thread_id)
);
