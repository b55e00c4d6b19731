-- The pending list's order, whole: an agent's requests by push time, then key. A page
-- is a range of this index read in order up to its limit, with no sort of the ties.
DROP INDEX api_requests_by_agent;
CREATE INDEX api_requests_page ON api_requests (agent, created_at_ms, approval_key);
