-- 0001: the request log. One row per client request in requests, one row per
-- backend tried (or skipped) in request_attempts. Times are unix
-- milliseconds, durations are float milliseconds. Prompt text is never stored.

CREATE TABLE requests (
    id                TEXT    NOT NULL PRIMARY KEY,
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
    committed         INTEGER NOT NULL DEFAULT 0
);

-- Listing is always newest first, optionally narrowed to one chain or
-- backend, so the filter indexes carry started_at as their second column.
CREATE INDEX requests_started_at ON requests (started_at);
CREATE INDEX requests_chain ON requests (chain, started_at);
CREATE INDEX requests_backend ON requests (backend, started_at);

CREATE TABLE request_attempts (
    request_id TEXT    NOT NULL REFERENCES requests (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    backend    TEXT    NOT NULL DEFAULT '',
    class      TEXT    NOT NULL DEFAULT '',
    status     INTEGER NOT NULL DEFAULT 0,
    latency_ms REAL    NOT NULL DEFAULT 0,
    ttft_ms    REAL,
    reason     TEXT    NOT NULL DEFAULT '',
    skipped    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (request_id, seq)
) WITHOUT ROWID;
