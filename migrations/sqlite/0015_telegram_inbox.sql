-- Telegram updates are stored before they are confirmed to Telegram (the next
-- getUpdates, or the webhook's 200), then handled from here and deleted. A crash
-- between the two leaves the row: the next start (or another replica, once the claim
-- lapses) handles it. `update_id` makes a redelivered update a no-op. `claimed_by`
-- is the replica handling it, until `claimed_until_ms` unless renewed.
CREATE TABLE telegram_inbox (
    update_id        BIGINT PRIMARY KEY NOT NULL,
    chat_id          BIGINT NOT NULL,
    body             TEXT NOT NULL,
    received_at_ms   BIGINT NOT NULL,
    claimed_by       TEXT NOT NULL,
    claimed_until_ms BIGINT NOT NULL
);
CREATE INDEX telegram_inbox_by_claim ON telegram_inbox (claimed_until_ms);
