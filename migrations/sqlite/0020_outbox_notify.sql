-- PostgreSQL announces each queued command to the other replicas (LISTEN/NOTIFY).
-- SQLite serves one process, which hands its commands over in memory: nothing to do.
SELECT 1;
