-- 0012: the dashboard's time series at the resolutions kept on disk, one
-- row per series and bucket. width is the bucket's length in seconds (60
-- for the day at one-minute resolution, 3600 for the 90 days at one-hour
-- resolution); series names what the row counts ('' every request,
-- 'b:<provider/model>' one backend's calls, 'c:<chain>' one chain's
-- requests); start is the bucket's start in Unix seconds, a multiple of
-- width. requests is kept apart for reading the figure without decoding;
-- data holds the rest (failures by class, tokens, cost, the latency and
-- time-to-first-token histograms) in the encoding of package metrics.
-- Buckets with no requests have no row. Old rows are deleted by the
-- series writer, so the table stays bounded.
CREATE TABLE series (
    width    INTEGER NOT NULL,
    series   TEXT    NOT NULL,
    start    INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    data     BLOB    NOT NULL,
    PRIMARY KEY (width, series, start)
) WITHOUT ROWID;
