-- 0005: the model alias pattern that routed a request to its chain, such as
-- "claude-*" for a client that asked for claude-sonnet-4-5 and was served by
-- the default chain. '' when the model name was matched exactly, and for the
-- rows written before this step.
ALTER TABLE requests ADD COLUMN alias TEXT NOT NULL DEFAULT '';
