-- The site and head shards one replica builds, which a page may fetch
-- from another (siteshards.Store): each by the SHA-256 its URL names,
-- with the bytes of the shard and its fragments in every encoding
-- served. named is when a replica last built or named it (Unix
-- nanoseconds); rows not named for a day are deleted.

-- +goose Up
CREATE TABLE site_shards (
    sha256 text PRIMARY KEY,
    body bytea NOT NULL,
    named bigint NOT NULL
);
CREATE INDEX site_shards_by_named ON site_shards (named);

-- +goose Down
DROP TABLE site_shards;
