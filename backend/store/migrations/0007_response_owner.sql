-- 0007: a stored response belongs to the caller that created it (owner, the
-- caller's identity as the API names it), and only that caller may read or
-- continue it. The responses stored before this step were filed under ids
-- an upstream could choose, hold text that was not redacted, and have no
-- known owner, so they are deleted rather than given one; secure_delete
-- overwrites their content in the file instead of leaving it in free pages.
-- size is the bytes of response and items, which the store's bound on its
-- total size counts; the index finds the oldest responses first.
PRAGMA secure_delete = ON;
DELETE FROM responses;
PRAGMA secure_delete = OFF;
ALTER TABLE responses ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE responses ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
CREATE INDEX responses_created_at ON responses (created_at);
