-- catalog_version holds the last catalog a replica announced (its
-- catalog.Announcement, as written), in its one row, for the replicas that
-- were not listening when it was announced.

-- +goose Up
CREATE TABLE catalog_version (
    id           boolean PRIMARY KEY DEFAULT true CHECK (id),
    announcement text NOT NULL,
    at_ns        bigint NOT NULL
);

-- +goose Down
DROP TABLE catalog_version;
