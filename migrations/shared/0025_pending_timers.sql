-- A pending interaction's next escalation time beside its deadline, so the replicas'
-- rescan of every pending request (every 10 s) reads two numbers per row instead of
-- decoding each body. `timers_known` is 0 on rows written before this column: the
-- rescan reads those once from their body and fills the column in.
ALTER TABLE interactions ADD COLUMN escalation_ms BIGINT;
ALTER TABLE interactions ADD COLUMN timers_known BIGINT NOT NULL DEFAULT 0;
