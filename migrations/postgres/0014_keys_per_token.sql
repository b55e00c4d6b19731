-- An approval_key belongs to the API token (agent) that pushed it: two agents may use
-- the same key, and neither can see, cancel or block the other's. Every existing row
-- already names its agent and keeps it.
ALTER TABLE api_requests DROP CONSTRAINT api_requests_pkey, ADD PRIMARY KEY (agent, approval_key);
ALTER TABLE callback_outbox DROP CONSTRAINT callback_outbox_pkey, ADD PRIMARY KEY (agent, approval_key);
