-- Sessions whose agent is in the middle of a turn: a message went to the backend and
-- its end has not come back. A bridge that starts (or, once the holder's lease lapses,
-- another replica) connects these sessions again, so a request the agent sends while
-- no bridge listens is still shown.
CREATE TABLE open_turns (
    session_id   TEXT PRIMARY KEY NOT NULL,
    opened_at_ms BIGINT NOT NULL
);
