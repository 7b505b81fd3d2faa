-- A day can have several exports: its own, and one for each batch of rows
-- it got after it (spooled clicks shipped after an outage). Each holds the
-- day's rows above from_seq and at or below seq; the day's own export
-- starts at 0, a later one at the seq of the export before it. A day's
-- rows at or below its records' highest seq are all in their files.

-- +goose Up
ALTER TABLE exports ADD COLUMN from_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE exports DROP CONSTRAINT exports_pkey;
ALTER TABLE exports ADD PRIMARY KEY (log, day, from_seq);
-- The late files' records a down migration kept aside come back, to the
-- days whose own record is still as it left it (at their highest seq),
-- and that record gets its own seq back, its first late file's from_seq.
-- A day recorded anew meanwhile keeps them aside: its new export holds
-- their rows again, and an operator sorts the two out.
CREATE TABLE IF NOT EXISTS exports_kept (LIKE exports INCLUDING INDEXES);
WITH back AS (
    DELETE FROM exports_kept k USING exports d, (
        SELECT log, day, max(seq) AS seq FROM exports_kept GROUP BY log, day
    ) m WHERE d.log = k.log AND d.day = k.day AND d.from_seq = 0 AND m.log = k.log AND m.day = k.day AND d.seq = m.seq
    RETURNING k.log, k.day, k.exported_at, k.host, k.path, k.rows, k.sha256, k.seq, k.from_seq
)
INSERT INTO exports (log, day, exported_at, host, path, rows, sha256, seq, from_seq)
    SELECT log, day, exported_at, host, path, rows, sha256, seq, from_seq FROM back ON CONFLICT DO NOTHING;
UPDATE exports d SET seq = l.first FROM (
    SELECT log, day, min(from_seq) AS first FROM exports WHERE from_seq > 0 GROUP BY log, day
) l WHERE d.log = l.log AND d.day = l.day AND d.from_seq = 0;
-- +goose StatementBegin
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM exports_kept) THEN
        DROP TABLE exports_kept;
    END IF;
END $$;
-- +goose StatementEnd

-- +goose Down
-- A version without parts knows one record a day: the day's own record
-- takes its later exports' highest seq, so the rows they hold still count
-- as exported and are deleted, and their records move to exports_kept,
-- which that version does not read (their files stay, named after the
-- day), for going up again and for the audit of those files.
CREATE TABLE IF NOT EXISTS exports_kept (LIKE exports INCLUDING INDEXES);
INSERT INTO exports_kept SELECT * FROM exports WHERE from_seq > 0 ON CONFLICT DO NOTHING;
UPDATE exports d SET seq = l.seq FROM (
    SELECT log, day, max(seq) AS seq FROM exports WHERE from_seq > 0 GROUP BY log, day
) l WHERE d.log = l.log AND d.day = l.day AND d.from_seq = 0 AND d.seq IS NOT NULL;
DELETE FROM exports WHERE from_seq > 0;
ALTER TABLE exports DROP CONSTRAINT exports_pkey;
ALTER TABLE exports ADD PRIMARY KEY (log, day);
ALTER TABLE exports DROP COLUMN from_seq;
