-- The day's read of every advertiser's spend (SpentAllOn: each server's
-- budget gate at its start, and again after a credit of invalid clicks)
-- reads one day's rows: the index on day finds them. Without it the
-- primary key, which leads with advertiser, served no such read, and
-- the read scanned every row of every day kept. The index holds the
-- advertiser after the day, so that a click's read of one advertiser's
-- day, where few advertisers have spend, is served by it as well as by
-- the primary key, rather than by the day's rows of every advertiser.
--
-- The index holds no micros: an upsert of the spend changes only
-- micros, so it stays a HOT update (fillfactor 50, migration 00007) that
-- writes no index. micros in an INCLUDE would make every click's upsert
-- write a new entry; and today's rows, updated many times a second, are
-- not all-visible, so the read would fetch them from the table all the
-- same.
--
-- It is built CONCURRENTLY, outside a transaction, as 00020 builds its
-- indexes and for the same reasons: the replicas still running go on
-- recording clicks while it builds; a start cut off while building left
-- an invalid index, moved aside, dropped and built anew, or a valid one,
-- kept; an index of the name on other columns is moved aside and dropped
-- too. The migration has no lock timeout: the build and the drop wait
-- for the transactions before them, blocking no read or write of spend
-- while they wait. The session's default comes back after them (RESET).

-- +goose NO TRANSACTION
-- +goose Up
SET lock_timeout = 0;
DROP INDEX CONCURRENTLY IF EXISTS spend_day_old;

-- +goose StatementBegin
DO $$
DECLARE
	i record;
BEGIN
	FOR i IN SELECT x.indexrelid::regclass AS idx
		FROM pg_index x
		WHERE x.indexrelid = to_regclass('spend_day')
		AND NOT (x.indisvalid AND x.indrelid = to_regclass('spend')
			AND split_part(pg_get_indexdef(x.indexrelid), ' USING ', 2) = 'btree (day, advertiser)')
	LOOP
		EXECUTE format('ALTER INDEX %s RENAME TO spend_day_old', i.idx);
	END LOOP;
END
$$;
-- +goose StatementEnd

DROP INDEX CONCURRENTLY IF EXISTS spend_day_old;
CREATE INDEX CONCURRENTLY IF NOT EXISTS spend_day ON spend (day, advertiser);
RESET lock_timeout;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS spend_day;
