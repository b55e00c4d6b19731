-- What the rule of who may act needs of an interaction (its `AccessFacts` as JSON: its
-- origin, requester, the approvers its policy names, whether it is an approval, who
-- voted), written with every body, so the web inbox applies the rule to thousands of
-- pending requests without decoding their bodies. `access_revision` is the revision
-- the facts were written at: the column holds only while it equals `revision`. On rows
-- written before (and rows a replica of an older version wrote since) it does not,
-- and the inbox reads those once from their body and fills the columns in.
ALTER TABLE interactions ADD COLUMN access TEXT;
ALTER TABLE interactions ADD COLUMN access_revision BIGINT NOT NULL DEFAULT -1;
