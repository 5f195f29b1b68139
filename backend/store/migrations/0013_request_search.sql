-- 0013: a request log people can search, sort and page through, and
-- optionally the bodies of the requests and their answers.
--
-- cost is what the request cost (the sum of its attempts' costs), kept in
-- its own column so the log can be sorted by it; the rows written before
-- this step get it from their attempts once, here.
ALTER TABLE requests ADD COLUMN cost REAL NOT NULL DEFAULT 0;
UPDATE requests SET cost = (SELECT COALESCE(SUM(json_extract(value, '$.cost')), 0) FROM json_each(requests.attempts))
    WHERE attempts <> '[]';

-- The listing index. Every page of the log walks the requests by time
-- (newest first by default), and every filter, name or text search and
-- sort reads only narrow columns: this index leads with the time and the
-- sequence number (the tiebreak of equal times), so a page is read in
-- order and resumed from its cursor without sorting, and holds every
-- column a filter, search or sort reads, so a filter that matches few
-- rows scans index entries (tens of bytes each) instead of the wide rows
-- (attempts, decision). It holds the columns of the caching view too and
-- replaces both requests_started_at and requests_caching, whose every use
-- it serves: the writer keeps one time-led index instead of two. Rows are
-- written in time order, so each insert appends to its end.
CREATE INDEX requests_listing ON requests (started_at, seq, session, backend, cache, chain, dialect,
    prompt_tokens, cache_read_tokens, cache_write_tokens, saved,
    status, class, stream, model, alias, latency_ms, ttft_ms, total_tokens, cost, error, notes);
DROP INDEX requests_started_at;
DROP INDEX requests_caching;

-- No index per sortable column: each would cost the writer an insert at a
-- random place in another B-tree on every request. A sort by latency,
-- first token, tokens or cost scans the listing index over the query's
-- time range (which holds those columns) and keeps the top of it: about
-- 15 ms for the first page of 100,000 requests, less for a time range.

-- The bodies of requests and their answers, kept only while body logging
-- is on (request_log.bodies in the config). Both are redacted and cut to
-- the configured size before they are written. They live apart from the
-- request rows so that the log's pages stay narrow when bodies are on and
-- the table costs nothing when they are off. started_at is the request's
-- start, by which they are pruned with the log.
CREATE TABLE request_bodies (
    request_id TEXT    NOT NULL PRIMARY KEY,
    started_at INTEGER NOT NULL,
    request    TEXT    NOT NULL DEFAULT '',
    answer     TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX request_bodies_started_at ON request_bodies (started_at);
