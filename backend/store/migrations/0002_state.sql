-- 0002: small named documents of runtime state that must survive a restart
-- (breaker and health state, probe schedule). Each is rewritten whole every
-- 30 seconds and at shutdown, never on the request path.
CREATE TABLE state (
    name       TEXT    NOT NULL PRIMARY KEY,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
);
