-- 0001: the request log, one row per client request. Times are unix
-- milliseconds, durations are float milliseconds. Prompt text is never stored.
--
-- The attempts of a request (every backend tried or skipped, in order) are
-- a JSON array in the same row: they are always read together with their
-- request, and one insert per request instead of one per attempt keeps the
-- log writer cheap at high request rates (measured: the separate table and
-- its foreign key made logging cost a fifth of the router's throughput).
-- SQLite's JSON functions still reach into them when a query needs to.

CREATE TABLE requests (
    seq               INTEGER PRIMARY KEY,
    -- Request IDs start with their time, so this index grows at its end.
    id                TEXT    NOT NULL UNIQUE,
    started_at        INTEGER NOT NULL,
    endpoint          TEXT    NOT NULL DEFAULT '',
    model             TEXT    NOT NULL DEFAULT '',
    chain             TEXT    NOT NULL DEFAULT '',
    backend           TEXT    NOT NULL DEFAULT '',
    stream            INTEGER NOT NULL DEFAULT 0,
    status            INTEGER NOT NULL DEFAULT 0,
    class             TEXT    NOT NULL DEFAULT '',
    error             TEXT    NOT NULL DEFAULT '',
    latency_ms        REAL    NOT NULL DEFAULT 0,
    -- NULL when no first token was measured (non-streaming or failed).
    ttft_ms           REAL,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens      INTEGER NOT NULL DEFAULT 0,
    committed         INTEGER NOT NULL DEFAULT 0,
    attempts          TEXT    NOT NULL DEFAULT '[]'
);

-- Listing is newest first, optionally narrowed by chain, backend or class;
-- walking this index backwards serves all of those.
CREATE INDEX requests_started_at ON requests (started_at);
