-- What a click or a typed reply needs to be understood by any replica: wizard steps,
-- ForceReply prompts, the page a long keyboard shows. Rows belong to an interaction
-- (removed when it ends) and expire (`expires_ms`) so nothing outlives its use.
CREATE TABLE ui_state (
    kind           TEXT NOT NULL,
    state_key      TEXT NOT NULL,
    interaction_id TEXT NOT NULL,
    value          TEXT NOT NULL,
    expires_ms     BIGINT NOT NULL,
    PRIMARY KEY (kind, state_key)
);
CREATE INDEX ui_state_interaction ON ui_state (interaction_id);
CREATE INDEX ui_state_expiry ON ui_state (expires_ms);
