-- Pairing (access.pairing): codes shown to strangers, and the users an admin paired.
-- `chat` is the chat key (JSON) where the person asked, so they can be told once
-- paired; `locale` is the language they were answered in there.
CREATE TABLE pairing_codes (
    code          TEXT PRIMARY KEY NOT NULL,
    platform      TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    user_name     TEXT NOT NULL,
    chat          TEXT NOT NULL,
    locale        TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);
CREATE INDEX pairing_codes_by_user ON pairing_codes (platform, user_id, expires_at_ms);

-- Users allowed to talk because an admin approved their code. `notified_at_ms` stays
-- NULL until a bridge has told them (the CLI pairs while the bridge runs elsewhere).
CREATE TABLE paired_users (
    platform       TEXT NOT NULL,
    user_id        TEXT NOT NULL,
    user_name      TEXT NOT NULL,
    chat           TEXT NOT NULL,
    locale         TEXT NOT NULL,
    paired_at_ms   BIGINT NOT NULL,
    paired_by      TEXT NOT NULL,
    notified_at_ms BIGINT,
    PRIMARY KEY (platform, user_id)
);
