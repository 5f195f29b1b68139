-- 0009: how the router chose each request's backends (the requested name,
-- chain, gear, strategy, task and every candidate's verdict), as JSON, so
-- a request's decision can be read back after it left the live tail.
-- Requests stored before have none ('').
ALTER TABLE requests ADD COLUMN decision TEXT NOT NULL DEFAULT '';
