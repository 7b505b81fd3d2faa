-- The yk_tags of links pages made are bounded per site and UTC day
-- (clicks.Tags): yk_tags holds each tag a site's day admitted, and
-- yk_tag_days each site's count that day, whose row an admission updates
-- and so locks, so that replicas admitting at once never pass the limit.
-- A day is counted from the epoch; days before yesterday are deleted.

-- +goose Up
CREATE TABLE yk_tags (
    day bigint NOT NULL,
    site text NOT NULL,
    tag text NOT NULL,
    PRIMARY KEY (day, site, tag)
);

CREATE TABLE yk_tag_days (
    day bigint NOT NULL,
    site text NOT NULL,
    n integer NOT NULL,
    PRIMARY KEY (day, site)
);

-- +goose Down
DROP TABLE yk_tag_days;
DROP TABLE yk_tags;
