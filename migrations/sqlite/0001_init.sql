-- hitl-bridge schema, SQLite flavour. Keep in step with ../postgres/0001_init.sql:
-- the same tables and columns, only the auto-increment syntax differs.
-- Timestamps are unix milliseconds; JSON is stored as TEXT.

-- An interaction is stored whole as its serde JSON in `body`. The other columns are
-- copies the store filters and sorts on; `status` is `Status::name()`.
CREATE TABLE interactions (
    id            TEXT PRIMARY KEY NOT NULL,
    session_id    TEXT NOT NULL,
    approval_key  TEXT NOT NULL,
    status        TEXT NOT NULL,
    deadline_ms   BIGINT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    body          TEXT NOT NULL,
    -- A replayed request (reconnect, history) must not create a second interaction.
    UNIQUE (session_id, approval_key)
);
CREATE INDEX interactions_by_status ON interactions (status, created_at_ms);

-- Platform messages showing an interaction, edited when it ends.
-- `thread_id` is '' for a chat without threads: NULLs never collide in a UNIQUE key.
CREATE TABLE message_refs (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    interaction_id TEXT NOT NULL REFERENCES interactions (id) ON DELETE CASCADE,
    platform       TEXT NOT NULL,
    chat_id        TEXT NOT NULL,
    thread_id      TEXT NOT NULL,
    message_id     TEXT NOT NULL,
    UNIQUE (interaction_id, platform, chat_id, thread_id, message_id)
);

-- Which session a chat talks to: one current session per chat.
CREATE TABLE chat_bindings (
    platform    TEXT NOT NULL,
    chat_id     TEXT NOT NULL,
    thread_id   TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    bound_at_ms BIGINT NOT NULL,
    PRIMARY KEY (platform, chat_id, thread_id)
);
CREATE INDEX chat_bindings_by_session ON chat_bindings (session_id);

-- Whose message started a session's current turn (an `Actor` as JSON).
CREATE TABLE session_requesters (
    session_id TEXT PRIMARY KEY NOT NULL,
    actor      TEXT NOT NULL
);

-- Commands waiting to reach the backend, removed once sent. `approval_key` is set for
-- `approval` commands so they can be dropped when history shows the backend has them.
CREATE TABLE outbox (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id    TEXT NOT NULL,
    approval_key  TEXT,
    command       TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL
);
CREATE INDEX outbox_by_session ON outbox (session_id, id);

-- One row per settled interaction. No foreign key: the audit outlives interactions.
CREATE TABLE audit_log (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms          BIGINT NOT NULL,
    session_id     TEXT NOT NULL,
    approval_key   TEXT NOT NULL,
    interaction_id TEXT NOT NULL,
    actor          TEXT,
    outcome        TEXT NOT NULL,
    reply          TEXT,
    original_args  TEXT NOT NULL,
    edited_args    TEXT,
    latency_ms     BIGINT NOT NULL
);
CREATE INDEX audit_log_by_key ON audit_log (approval_key, id);
