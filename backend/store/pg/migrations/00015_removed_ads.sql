-- removed_ads holds the ads refreshes removed from the catalog whose click
-- links still land (catalog.Removals), one row an ad: the ad as the
-- removed ads' file keeps it (JSON, with its advertiser's last budget
-- served) and until when its links land, in Unix
-- nanoseconds. Every replica reads them at start and at each catalog
-- swap, so that one which did not see an ad go lands its links too. Rows
-- whose time is up are deleted by the next replica to share.

-- +goose Up
CREATE TABLE removed_ads (
    id       text PRIMARY KEY,
    ad       bytea NOT NULL,
    until_ns bigint NOT NULL
);

CREATE INDEX removed_ads_until ON removed_ads (until_ns);

-- +goose Down
DROP TABLE removed_ads;
