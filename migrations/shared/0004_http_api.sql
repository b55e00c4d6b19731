-- Requests pushed over the inbound HTTP API (PROTOCOL.md §8). One row per
-- approval_key, written in the same transaction as its interaction. `body_hash` makes
-- POST idempotent (same body → the current state, another body → 409); `agent` is the
-- API token's name; `targets` is a JSON array of chat keys the request is shown in.
CREATE TABLE api_requests (
    approval_key   TEXT PRIMARY KEY NOT NULL,
    interaction_id TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    client_session TEXT,
    agent          TEXT NOT NULL,
    body_hash      TEXT NOT NULL,
    targets        TEXT NOT NULL,
    callback_url   TEXT,
    created_at_ms  BIGINT NOT NULL
);
CREATE INDEX api_requests_by_agent ON api_requests (agent, created_at_ms);

-- The HTTP API's outbox: callbacks owed to agents. A row is written with its request
-- and becomes due once the interaction leaves `pending`; it is removed only after the
-- agent answered 2xx. `next_attempt_ms` doubles as a claim so two replicas never post
-- the same callback at once.
CREATE TABLE callback_outbox (
    approval_key    TEXT PRIMARY KEY NOT NULL,
    interaction_id  TEXT NOT NULL,
    url             TEXT NOT NULL,
    agent           TEXT NOT NULL,
    attempts        BIGINT NOT NULL,
    next_attempt_ms BIGINT NOT NULL
);

-- The agent (API token name) that pushed the request, for pushed requests.
ALTER TABLE audit_log ADD COLUMN agent TEXT;
