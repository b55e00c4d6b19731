-- Two reads of the web inbox that scanned a table per view with 10,000 pending:
--
-- A pushed request's row found from its interaction: where a page's 50 rows are shown
-- (and retention's delete of settled ones). Without it each read scanned every
-- pushed request.
CREATE INDEX api_requests_by_interaction ON api_requests (interaction_id);
-- Every pending request's access facts grouped by their text, read from this index
-- alone (it holds every column the read needs) and only over pending rows, so
-- neither the bodies nor the settled rows are touched. The read names the status as
-- this literal, which is what lets both databases use a partial index.
CREATE INDEX interactions_pending_access ON interactions (status, access, access_revision, revision, created_at_ms, deadline_ms, id)
    WHERE status = 'pending';
