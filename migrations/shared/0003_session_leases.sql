-- Which replica holds each session's backend connection. A lease is renewed while the
-- connection lives; another replica may take it once `until_ms` has passed.
CREATE TABLE session_leases (
    session_id TEXT PRIMARY KEY NOT NULL,
    owner      TEXT NOT NULL,
    until_ms   BIGINT NOT NULL
);
