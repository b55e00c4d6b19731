-- An approval_key belongs to the API token (agent) that pushed it: two agents may use
-- the same key, and neither can see, cancel or block the other's. SQLite cannot change
-- a primary key in place, so both tables are rebuilt; every existing row already names
-- its agent and keeps it.
CREATE TABLE api_requests_by_agent_key (
    approval_key   TEXT NOT NULL,
    interaction_id TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    client_session TEXT,
    agent          TEXT NOT NULL,
    body_hash      TEXT NOT NULL,
    targets        TEXT NOT NULL,
    callback_url   TEXT,
    created_at_ms  BIGINT NOT NULL,
    PRIMARY KEY (agent, approval_key)
);
INSERT INTO api_requests_by_agent_key
    SELECT approval_key, interaction_id, session_id, client_session, agent, body_hash, targets, callback_url, created_at_ms
    FROM api_requests;
DROP TABLE api_requests;
ALTER TABLE api_requests_by_agent_key RENAME TO api_requests;
CREATE INDEX api_requests_by_agent ON api_requests (agent, created_at_ms);

CREATE TABLE callback_outbox_by_agent_key (
    approval_key    TEXT NOT NULL,
    interaction_id  TEXT NOT NULL,
    url             TEXT NOT NULL,
    agent           TEXT NOT NULL,
    attempts        BIGINT NOT NULL,
    next_attempt_ms BIGINT NOT NULL,
    PRIMARY KEY (agent, approval_key)
);
INSERT INTO callback_outbox_by_agent_key
    SELECT approval_key, interaction_id, url, agent, attempts, next_attempt_ms FROM callback_outbox;
DROP TABLE callback_outbox;
ALTER TABLE callback_outbox_by_agent_key RENAME TO callback_outbox;
