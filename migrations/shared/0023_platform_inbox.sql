-- One durable inbox for every chat platform's updates (was `telegram_inbox`): an
-- update is stored before it is confirmed to its platform (Telegram's next getUpdates
-- or webhook 200, a Socket Mode envelope's ack), then handled from here, so a crash
-- between the two loses nothing and an update delivered again is a no-op.
-- `update_id` is the platform's own id (text: Slack's envelope ids are not numbers),
-- unique per platform; `seq` orders a platform's updates (Telegram's update id);
-- `lane` is the chat whose queue handles it. Claims and retention as before.
CREATE TABLE platform_inbox (
    platform         TEXT NOT NULL,
    update_id        TEXT NOT NULL,
    seq              BIGINT NOT NULL,
    lane             TEXT NOT NULL,
    body             TEXT NOT NULL,
    received_at_ms   BIGINT NOT NULL,
    claimed_by       TEXT NOT NULL,
    claimed_until_ms BIGINT NOT NULL,
    handled_at_ms    BIGINT,
    PRIMARY KEY (platform, update_id)
);
CREATE INDEX platform_inbox_by_claim ON platform_inbox (platform, handled_at_ms, claimed_until_ms);
-- Every row as it was, claims and handled marks included, in the same transaction as
-- the drop: an update waiting at the upgrade is handled once, after it.
INSERT INTO platform_inbox (platform, update_id, seq, lane, body, received_at_ms, claimed_by, claimed_until_ms, handled_at_ms)
    SELECT 'telegram', CAST(update_id AS TEXT), update_id, CAST(chat_id AS TEXT), body, received_at_ms, claimed_by, claimed_until_ms, handled_at_ms
    FROM telegram_inbox;
DROP TABLE telegram_inbox;
