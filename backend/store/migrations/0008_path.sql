-- 0008: the API path each request came in on ("/v1/messages",
-- "/v1/responses", "/v1beta/models/{model}:generateContent"), in the request
-- log and in the ledger, so both can say which API a request used. The
-- endpoint column keeps the kind of request (chat/completions, completions,
-- embeddings), which does not tell an Anthropic client from an OpenAI one.
-- Rows written before this step keep '' (not recorded) rather than a guess.
ALTER TABLE requests ADD COLUMN path TEXT NOT NULL DEFAULT '';
ALTER TABLE ledger ADD COLUMN path TEXT NOT NULL DEFAULT '';

-- The daily totals are kept per path too, so usage by path still adds up
-- once old rows are rolled up. The path joins the primary key, which SQLite
-- cannot alter in place: the table is rebuilt with every row it held, each
-- under path ''.
CREATE TABLE ledger_daily_new (
    day               TEXT    NOT NULL,
    backend           TEXT    NOT NULL,
    chain             TEXT    NOT NULL,
    path              TEXT    NOT NULL DEFAULT '',
    requests          INTEGER NOT NULL DEFAULT 0,
    failures          INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    estimated_tokens  INTEGER NOT NULL DEFAULT 0,
    cost              REAL    NOT NULL DEFAULT 0,
    PRIMARY KEY (day, backend, chain, path)
);
INSERT INTO ledger_daily_new (day, backend, chain, path, requests, failures, prompt_tokens, completion_tokens, estimated_tokens, cost)
    SELECT day, backend, chain, '', requests, failures, prompt_tokens, completion_tokens, estimated_tokens, cost FROM ledger_daily;
DROP TABLE ledger_daily;
ALTER TABLE ledger_daily_new RENAME TO ledger_daily;
