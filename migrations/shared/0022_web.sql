-- The web inbox (#35, docs/web.md). Secrets are never stored: a sign-in link's token
-- and a session's cookie are kept as their SHA-256 hex, so a copy of the database
-- cannot be used to sign in.
--
-- One-time sign-in links: bound to one platform user (an `Actor` as JSON), valid until
-- `expires_at_ms` (10 minutes by the wall clock), spent once (`used_at_ms`).
CREATE TABLE web_sign_in_links (
    token_hash    TEXT PRIMARY KEY NOT NULL,
    actor         TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    used_at_ms    BIGINT
);

-- Browser sessions: who (an `Actor` as JSON), the CSRF token every form of the session
-- carries, and when it was last used (idle expiry, `web.session_idle_secs`).
CREATE TABLE web_sessions (
    id_hash       TEXT PRIMARY KEY NOT NULL,
    actor         TEXT NOT NULL,
    csrf          TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    last_seen_ms  BIGINT NOT NULL
);
CREATE INDEX web_sessions_by_last_seen ON web_sessions (last_seen_ms);
