-- The interaction revision each message last showed (-1: unknown). After a restart only
-- the messages of pending interactions whose revision moved on are edited again; the
-- rest already show their current state.
ALTER TABLE message_refs ADD COLUMN shown_revision BIGINT NOT NULL DEFAULT -1;
