-- 0010: kept for the response cache's tables, which arrive with the
-- response cache itself; until then this step changes nothing.
SELECT 1;
