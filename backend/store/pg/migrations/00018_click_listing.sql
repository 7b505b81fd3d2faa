-- GET /v2/clicks lists an advertiser's or a partner's clicks of a range
-- in the order of their time, then id (byte order), a page at a time
-- from a cursor: each index serves one kind of account's listing, read
-- in order from the cursor with no sort. A click without an id lists
-- under ''.

-- +goose Up
CREATE INDEX clicks_advertiser_at ON clicks (advertiser, at_ns, (coalesce(click_id, '') COLLATE "C"));
CREATE INDEX clicks_api_key_at ON clicks (api_key, at_ns, (coalesce(click_id, '') COLLATE "C"));

-- +goose Down
DROP INDEX clicks_api_key_at;
DROP INDEX clicks_advertiser_at;
