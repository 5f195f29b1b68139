-- 0011: what caching did for each request. cache_read_tokens and
-- cache_write_tokens are the parts of prompt_tokens the provider read from
-- and wrote to its prompt cache; saved is what caching saved in the user's
-- currency (the prompt cache's discount, or for a response-cache hit the
-- cost of the answer when it was first made); cache is what the response
-- cache did ("hit", "miss", "bypass", "refresh", '' when not asked);
-- session is the first 16 hex digits of the request's session key, which
-- groups the turns of one conversation ('' for none). Rows written before
-- this step keep 0 and '' (not recorded).
ALTER TABLE requests ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN saved REAL NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN cache TEXT NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN session TEXT NOT NULL DEFAULT '';

-- The caching view adds these columns up over a time window. The index
-- leads with the start time, so a window reads only its own rows however
-- long the log, and holds every column the view reads, so the view never
-- visits the wide rows (attempts, decision).
CREATE INDEX requests_caching ON requests (started_at, session, backend, cache, chain, dialect,
    prompt_tokens, cache_read_tokens, cache_write_tokens, saved);
