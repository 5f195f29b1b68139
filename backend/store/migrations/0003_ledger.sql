-- 0003: the usage ledger, one row per attempt that called a backend
-- (skipped backends cost nothing and are not in it). Written in the same
-- transaction as the request row it belongs to. Times are unix
-- milliseconds, durations float milliseconds, cost in the user's currency.
CREATE TABLE ledger (
    seq               INTEGER PRIMARY KEY,
    time              INTEGER NOT NULL,
    request_id        TEXT    NOT NULL,
    chain             TEXT    NOT NULL DEFAULT '',
    backend           TEXT    NOT NULL,
    outcome           TEXT    NOT NULL,
    status            INTEGER NOT NULL DEFAULT 0,
    latency_ms        REAL    NOT NULL DEFAULT 0,
    ttft_ms           REAL,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    -- 1 when the tokens were estimated offline, not reported upstream.
    estimated         INTEGER NOT NULL DEFAULT 0,
    cost              REAL    NOT NULL DEFAULT 0
);
CREATE INDEX ledger_time ON ledger (time);

-- Rows older than the retention period are folded into daily totals per
-- backend and chain. day is the server's local calendar date, YYYY-MM-DD.
CREATE TABLE ledger_daily (
    day               TEXT    NOT NULL,
    backend           TEXT    NOT NULL,
    chain             TEXT    NOT NULL,
    requests          INTEGER NOT NULL DEFAULT 0,
    failures          INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    estimated_tokens  INTEGER NOT NULL DEFAULT 0,
    cost              REAL    NOT NULL DEFAULT 0,
    PRIMARY KEY (day, backend, chain)
);
