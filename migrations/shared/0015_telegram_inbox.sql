-- Telegram updates are stored before they are confirmed to Telegram (the next
-- getUpdates, or the webhook's 200), then handled from here. A crash between the two
-- leaves the row unhandled: the next start (or another replica, once the claim lapses)
-- handles it. `update_id` makes an update Telegram delivers again a no-op, also after
-- it was handled: handled rows are kept a day (`handled_at_ms`), as long as Telegram
-- keeps an update, then pruned. `claimed_by` is the replica handling it, until
-- `claimed_until_ms` unless renewed.
CREATE TABLE telegram_inbox (
    update_id        BIGINT PRIMARY KEY NOT NULL,
    chat_id          BIGINT NOT NULL,
    body             TEXT NOT NULL,
    received_at_ms   BIGINT NOT NULL,
    claimed_by       TEXT NOT NULL,
    claimed_until_ms BIGINT NOT NULL,
    handled_at_ms    BIGINT
);
CREATE INDEX telegram_inbox_by_claim ON telegram_inbox (handled_at_ms, claimed_until_ms);
