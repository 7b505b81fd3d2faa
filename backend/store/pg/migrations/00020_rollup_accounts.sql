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
-- plain CREATE INDEX would block every write to rollups until done). A
-- build that failed leaves an invalid index of the same name: each is
-- dropped first, so that running the migration again builds it anew.

-- +goose NO TRANSACTION
-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS rollups_api_key;
CREATE INDEX CONCURRENTLY rollups_api_key ON rollups (grain, api_key, period);
DROP INDEX CONCURRENTLY IF EXISTS rollups_advertiser;
CREATE INDEX CONCURRENTLY rollups_advertiser ON rollups (grain, advertiser, period);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS rollups_advertiser;
DROP INDEX CONCURRENTLY IF EXISTS rollups_api_key;
