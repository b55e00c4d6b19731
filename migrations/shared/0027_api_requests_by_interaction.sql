-- A pushed request's row found from its interaction: where a page of the web inbox is
-- shown (the targets of its 50 rows), and retention's delete of settled ones. Without
-- it each read scanned every pushed request.
CREATE INDEX api_requests_by_interaction ON api_requests (interaction_id);
