-- A day's export holds the day's rows up to a sequence number (seq): the
-- highest its table had given when the export began, read under a lock
-- that waits for every insert in flight. Deletion takes only those rows;
-- a row recorded in the day later (a spooled click shipped after an
-- outage) has a higher seq, is in no export, and is kept. Records made
-- before have none (NULL): their export held every row of the day.

-- +goose Up
ALTER TABLE exports ADD COLUMN seq bigint;

-- +goose Down
ALTER TABLE exports DROP COLUMN seq;
