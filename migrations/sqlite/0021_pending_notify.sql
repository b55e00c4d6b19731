-- PostgreSQL announces each new pending request (its deadline to watch) to the other
-- replicas (LISTEN/NOTIFY). SQLite serves one process, whose engine watches every
-- request it creates: nothing to do.
SELECT 1;
