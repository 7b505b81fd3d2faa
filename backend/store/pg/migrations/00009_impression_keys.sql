-- An impression beacon replayed counts once: each impression carries a
-- key (clicks.ImpressionKey) of its ad, page, client network and window,
-- and impression_keys holds the keys of the impressions recorded. An
-- append inserts its keys with ON CONFLICT DO NOTHING in its transaction,
-- and records only the impressions whose key it inserted, so replicas
-- appending or shipping one impression at once record it once. A key is
-- 16 bytes, its first 4 the start of its window in Unix minutes: the keys
-- sort by age, and those past clicks.ImpressionKeyTTL are deleted by
-- primary-key range. Impressions without a key (servers of the version
-- before) are recorded as before.

-- +goose Up
CREATE TABLE impression_keys (
    key bytea PRIMARY KEY
);

-- +goose Down
DROP TABLE impression_keys;
