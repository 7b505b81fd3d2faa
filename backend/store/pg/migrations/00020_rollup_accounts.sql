-- A partner's or an advertiser's report reads only its own rollups: each
-- index serves one kind of account (api_key for a partner, advertiser for
-- an advertiser), a grain's periods of the account in order. Without
-- them the primary key, which leads with (grain, period), gave every
-- account's rows of the range to be filtered.
--
-- The indexes hold no measures: an upsert of a rollup changes only its
-- measures, so it stays a HOT update (fillfactor 50, migration 00007) that
-- writes no index. Measures in an INCLUDE would make every upsert write
-- a new entry in each index.
--
-- They are built CONCURRENTLY, outside a transaction, so that the
-- replicas still running go on recording clicks while they build (a
-- plain CREATE INDEX would block every write to rollups until done).
--
-- A start cut off while building (killed, or stopped) leaves an index of
-- the name: an invalid one if the build did not end, which is moved
-- aside, dropped and built anew; a valid one if Postgres finished the
-- build before the migration was recorded, which is kept, not
-- built again. An index of the name on other columns is moved aside and
-- dropped too. Moving one aside (ALTER INDEX ... RENAME) locks the index,
-- not the table.
--
-- The migration has no lock timeout: a build waits for the transactions
-- older than its phases, which a timeout would cut off after the work,
-- leaving an invalid index to build again from nothing, and a drop
-- CONCURRENTLY for every transaction that used rollups, which a timeout
-- would give up on again and again while reports overlap; and their
-- locks (SHARE UPDATE EXCLUSIVE, the rename's on the index alone) block
-- no read or write of rollups while they wait. The session's default
-- comes back after them (RESET).

-- +goose NO TRANSACTION
-- +goose Up
SET lock_timeout = 0;
DROP INDEX CONCURRENTLY IF EXISTS rollups_api_key_old;
DROP INDEX CONCURRENTLY IF EXISTS rollups_advertiser_old;

-- +goose StatementBegin
DO $$
DECLARE
	i record;
BEGIN
	FOR i IN SELECT v.name, x.indexrelid::regclass AS idx
		FROM (VALUES ('rollups_api_key', 'btree (grain, api_key, period)'),
			('rollups_advertiser', 'btree (grain, advertiser, period)')) AS v(name, def)
		JOIN pg_index x ON x.indexrelid = to_regclass(v.name)
		WHERE NOT (x.indisvalid AND x.indrelid = to_regclass('rollups')
			AND split_part(pg_get_indexdef(x.indexrelid), ' USING ', 2) = v.def)
	LOOP
		EXECUTE format('ALTER INDEX %s RENAME TO %I', i.idx, i.name || '_old');
	END LOOP;
END
$$;
-- +goose StatementEnd

DROP INDEX CONCURRENTLY IF EXISTS rollups_api_key_old;
DROP INDEX CONCURRENTLY IF EXISTS rollups_advertiser_old;
CREATE INDEX CONCURRENTLY IF NOT EXISTS rollups_api_key ON rollups (grain, api_key, period);
CREATE INDEX CONCURRENTLY IF NOT EXISTS rollups_advertiser ON rollups (grain, advertiser, period);
RESET lock_timeout;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS rollups_advertiser;
DROP INDEX CONCURRENTLY IF EXISTS rollups_api_key;
