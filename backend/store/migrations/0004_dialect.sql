-- 0004: the wire dialect (openai, openai-responses, anthropic, gemini) of
-- each request and each attempt, now that clients and backends need not all
-- speak OpenAI's. requests.dialect is the one the client spoke; each attempt
-- in the attempts JSON carries the one its backend was spoken to in, and
-- ledger.dialect copies it so the ledger can be read without the request.
-- Rows written before this step keep '' (not recorded) rather than a guess,
-- so a reader can tell a recorded dialect from an assumed one.
-- The daily totals stay per backend and chain: a backend is spoken to in its
-- provider's dialect, so a column there would only repeat the backend.
ALTER TABLE requests ADD COLUMN dialect TEXT NOT NULL DEFAULT '';
ALTER TABLE ledger ADD COLUMN dialect TEXT NOT NULL DEFAULT '';
