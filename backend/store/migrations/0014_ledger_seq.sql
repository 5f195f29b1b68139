-- 0014: ledger.seq becomes AUTOINCREMENT, so that a seq is never handed out
-- twice: a plain INTEGER PRIMARY KEY reuses the numbers of the newest rows
-- once they are deleted (the roll-up deletes every old row), and a shipper
-- that copies the ledger elsewhere names the last row it copied by its seq.
-- SQLite cannot add AUTOINCREMENT in place, so the table is rebuilt with
-- every row it held under its seq. The columns are those of LedgerTable in
-- shared.go, in its order; a test checks that they agree.
CREATE TABLE ledger_new (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    time INTEGER NOT NULL,
    request_id TEXT NOT NULL,
    chain TEXT NOT NULL DEFAULT '',
    backend TEXT NOT NULL,
    dialect TEXT NOT NULL DEFAULT '',
    path TEXT NOT NULL DEFAULT '',
    outcome TEXT NOT NULL,
    status INTEGER NOT NULL DEFAULT 0,
    latency_ms REAL NOT NULL DEFAULT 0,
    ttft_ms REAL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    estimated INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0
);
INSERT INTO ledger_new (seq, time, request_id, chain, backend, dialect, path, outcome, status, latency_ms, ttft_ms,
    prompt_tokens, completion_tokens, estimated, cost)
    SELECT seq, time, request_id, chain, backend, dialect, path, outcome, status, latency_ms, ttft_ms,
    prompt_tokens, completion_tokens, estimated, cost FROM ledger;
DROP TABLE ledger;
ALTER TABLE ledger_new RENAME TO ledger;
CREATE INDEX ledger_time ON ledger (time);
