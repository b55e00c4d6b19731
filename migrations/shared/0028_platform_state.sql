-- What a chat platform keeps for itself across restarts and shares with its other
-- replicas: a sync token, who is in a group, a remembered view. A row belongs to one
-- platform, which reads and writes only its own (`store::PlatformState`); the store
-- does not interpret `value`. `version` counts the row's writes (1 for the first), so
-- a cursor moves by compare-and-set: of replicas moving it from the same version, one
-- wins. `expires_ms`, when set, is when the row stops being read; the platform's next
-- write deletes it.
CREATE TABLE platform_state (
    platform   TEXT NOT NULL,
    state_key  TEXT NOT NULL,
    value      TEXT NOT NULL,
    version    BIGINT NOT NULL,
    expires_ms BIGINT,
    updated_ms BIGINT NOT NULL,
    PRIMARY KEY (platform, state_key)
);
CREATE INDEX platform_state_expiry ON platform_state (platform, expires_ms);
