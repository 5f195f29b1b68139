-- 0015: in a team, each request row names the instance that served it, so
-- that a dashboard showing rows of several instances can tell them apart.
-- '' on a single machine and for the rows written before this step.
ALTER TABLE requests ADD COLUMN instance TEXT NOT NULL DEFAULT '';
