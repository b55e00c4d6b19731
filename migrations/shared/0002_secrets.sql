-- Secrets the bridge generates for itself on first run (e.g. the callback-token key),
-- so they survive restarts and are shared by replicas on the same database.
CREATE TABLE secrets (
    name  TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
