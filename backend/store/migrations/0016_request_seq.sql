-- 0016: requests.seq becomes AUTOINCREMENT, so that a seq is never handed
-- out twice: a plain INTEGER PRIMARY KEY reuses the numbers of the newest
-- rows once they are deleted (pruning an idle log deletes every row), and
-- a shipper that copies the log elsewhere names the last row it copied by
-- its seq. SQLite cannot add AUTOINCREMENT in place, so the table is
-- rebuilt with every row it held under its seq, and its listing index made
-- again. The columns are those of RequestsTable in shared.go, in its
-- order; a test checks that they agree.
CREATE TABLE requests_new (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    started_at INTEGER NOT NULL,
    endpoint TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    chain TEXT NOT NULL DEFAULT '',
    backend TEXT NOT NULL DEFAULT '',
    stream INTEGER NOT NULL DEFAULT 0,
    status INTEGER NOT NULL DEFAULT 0,
    class TEXT NOT NULL DEFAULT '',
    error TEXT NOT NULL DEFAULT '',
    latency_ms REAL NOT NULL DEFAULT 0,
    ttft_ms REAL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens INTEGER NOT NULL DEFAULT 0,
    committed INTEGER NOT NULL DEFAULT 0,
    attempts TEXT NOT NULL DEFAULT '[]',
    dialect TEXT NOT NULL DEFAULT '',
    alias TEXT NOT NULL DEFAULT '',
    notes TEXT NOT NULL DEFAULT '',
    path TEXT NOT NULL DEFAULT '',
    decision TEXT NOT NULL DEFAULT '',
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    saved REAL NOT NULL DEFAULT 0,
    cache TEXT NOT NULL DEFAULT '',
    session TEXT NOT NULL DEFAULT '',
    cost REAL NOT NULL DEFAULT 0,
    instance TEXT NOT NULL DEFAULT ''
);
INSERT INTO requests_new (seq, id, started_at, endpoint, model, chain, backend, stream, status, class, error,
    latency_ms, ttft_ms, prompt_tokens, completion_tokens, total_tokens, committed, attempts, dialect, alias, notes,
    path, decision, cache_read_tokens, cache_write_tokens, saved, cache, session, cost, instance)
    SELECT seq, id, started_at, endpoint, model, chain, backend, stream, status, class, error,
    latency_ms, ttft_ms, prompt_tokens, completion_tokens, total_tokens, committed, attempts, dialect, alias, notes,
    path, decision, cache_read_tokens, cache_write_tokens, saved, cache, session, cost, instance FROM requests;
DROP TABLE requests;
ALTER TABLE requests_new RENAME TO requests;
CREATE INDEX requests_listing ON requests (started_at, seq, session, backend, cache, chain, dialect,
    prompt_tokens, cache_read_tokens, cache_write_tokens, saved,
    status, class, stream, model, alias, latency_ms, ttft_ms, total_tokens, cost, error, notes);

-- The bodies are numbered the same way, for the same reason; their rowid
-- becomes their seq.
CREATE TABLE request_bodies_new (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL UNIQUE,
    started_at INTEGER NOT NULL,
    request TEXT NOT NULL DEFAULT '',
    answer TEXT NOT NULL DEFAULT ''
);
INSERT INTO request_bodies_new (seq, request_id, started_at, request, answer)
    SELECT rowid, request_id, started_at, request, answer FROM request_bodies ORDER BY rowid;
DROP TABLE request_bodies;
ALTER TABLE request_bodies_new RENAME TO request_bodies;
CREATE INDEX request_bodies_started_at ON request_bodies (started_at);
