-- Decision policies (issue #10). Same text in ../sqlite/0010_policies.sql.

-- Every write of an interaction's body adds one to `revision`, and a draft is saved
-- only over the revision it was read at (compare-and-swap): two replicas counting
-- votes on the same request cannot overwrite each other's. Settling stays
-- first-wins on `status` and bumps it too.
ALTER TABLE interactions ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;

-- Remembered approvals ("approve for this session", "always approve"). `id` is the
-- id of the interaction whose approval set the rule. No foreign key: a rule outlives
-- the interaction that set it (retention). A revoked rule is kept, with who revoked
-- it and when, and never answers again.
CREATE TABLE remembered_rules (
    id            TEXT PRIMARY KEY NOT NULL,
    -- 'session' or 'always'.
    scope         TEXT NOT NULL,
    tool          TEXT NOT NULL,
    -- The exact args as JSON; NULL for any args.
    args          TEXT,
    -- The session of a 'session' rule; NULL for 'always'.
    session_id    TEXT,
    -- The backend kind (stream, kimi, …, http for pushed requests).
    backend       TEXT NOT NULL,
    -- An `Actor` as JSON.
    set_by        TEXT NOT NULL,
    set_at_ms     BIGINT NOT NULL,
    -- The name of the policy that offered it.
    policy        TEXT NOT NULL,
    -- An `Actor` as JSON; both NULL while the rule is active.
    revoked_by    TEXT,
    revoked_at_ms BIGINT
);
CREATE INDEX remembered_rules_by_backend ON remembered_rules (backend, set_at_ms);
