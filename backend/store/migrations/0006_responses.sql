-- 0006: stored Responses API answers, so a client can continue one by its
-- previous_response_id (or read it back) without sending the conversation
-- again. Each row holds the response object as the client got it and the
-- whole conversation up to it (its input items, those of the responses it
-- continued, and its output items) as a JSON array, so continuing it is one
-- read. Rows expire after the configured retention and are pruned; times
-- are unix milliseconds.
CREATE TABLE responses (
    id         TEXT    PRIMARY KEY,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    response   TEXT    NOT NULL,
    items      TEXT    NOT NULL
);
CREATE INDEX responses_expires_at ON responses (expires_at);

-- What a request's parser left out because no backend can serve it (a
-- hosted tool, an item only OpenAI reads), as a JSON array; '' for none.
ALTER TABLE requests ADD COLUMN notes TEXT NOT NULL DEFAULT '';
