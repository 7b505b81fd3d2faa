-- A day can have several exports: its own, and one for each batch of rows
-- it got after it (spooled clicks shipped after an outage). Each holds the
-- day's rows above from_seq and at or below seq; the day's own export
-- starts at 0, a later one at the seq of the export before it. A day's
-- rows at or below its records' highest seq are all in their files.

-- +goose Up
ALTER TABLE exports ADD COLUMN from_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE exports DROP CONSTRAINT exports_pkey;
ALTER TABLE exports ADD PRIMARY KEY (log, day, from_seq);

-- +goose Down
-- A version without parts knows one record a day: the day's own record
-- takes its later exports' highest seq, so the rows they hold still count
-- as exported and are deleted, and their records go (their files stay,
-- named after the day).
UPDATE exports d SET seq = l.seq FROM (
    SELECT log, day, max(seq) AS seq FROM exports WHERE from_seq > 0 GROUP BY log, day
) l WHERE d.log = l.log AND d.day = l.day AND d.from_seq = 0 AND d.seq IS NOT NULL;
DELETE FROM exports WHERE from_seq > 0;
ALTER TABLE exports DROP CONSTRAINT exports_pkey;
ALTER TABLE exports ADD PRIMARY KEY (log, day);
ALTER TABLE exports DROP COLUMN from_seq;
