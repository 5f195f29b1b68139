-- 0010: the exact response cache. Each row is one answer, in the neutral
-- model as JSON, filed under the SHA-256 of the normalized request (its
-- conversation, parameters, route and caller), with the backend that made
-- it, what it cost then, and when it was made and last served (unix
-- milliseconds) for the TTL and for evicting the least recently used.
CREATE TABLE response_cache (
    key        BLOB    PRIMARY KEY,
    answer     TEXT    NOT NULL,
    backend    TEXT    NOT NULL,
    cost       REAL    NOT NULL,
    created_at INTEGER NOT NULL,
    used_at    INTEGER NOT NULL
);

-- What the cache did since it was first turned on: one row.
CREATE TABLE response_cache_totals (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    hits   INTEGER NOT NULL,
    misses INTEGER NOT NULL,
    saved  REAL    NOT NULL
);
